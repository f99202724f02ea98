// Command dshtrace reads dsh session logs offline: it checks them against
// the format's invariants, derives the model-visible history, outlines turns
// and finds the rows behind a turn, a tool call or a seq, and shows whole
// sessions as replay pages, one file at a time or served from session roots.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

const usage = `usage: dshtrace <command> [flags] FILE...

commands:
  check [--json] [--session ID] FILE...
      validate logs; exit 1 on violations, 2 if unreadable
  derive [--json] [--before-step T.S] [--session ID] FILE
      the model-visible history
  turns [--session ID] FILE
      an outline of turns, steps and tool calls
  query FILE (--turn N | --call-id ID | --sources SEQ [--transitive]) [--session ID]
      the physical rows behind a turn, call or seq
  spans [--json] [--otlp-endpoint URL] [--agent-name NAME] [--capture-content] [--session ID] FILE
      the trace of every turn (turns never ended close as dangling)
  replay [-o FILE.html] [--jaeger URL] [--no-content] [--session ID] FILE
      one self-contained HTML page of the session
  serve [--addr 127.0.0.1:7788] [--allow-host NAME] [--jaeger URL] [--no-content]
        [--turns-per-page N] [--max-page-memory MiB] ROOT...
      the replay pages of every session under dsh session roots
  findings [--json] [--loop-repeats N] [--error-streak N] [--retries N] [--max-steps N]
           [--max-tokens N] [--max-cost USD] [--max-duration D] [--session ID] FILE|ROOT...
      what went wrong in each turn; exit 1 on any finding, 2 if unreadable
  export [--finding NAME] [--reason KIND] [--agent NAME] [--model NAME] [-o FILE] [--session ID] FILE|ROOT...
      the model calls of the turns selected, as JSONL: request, tools, answer, provenance

Flags and files go in any order; "dshtrace COMMAND --help" describes a command's flags.
FILE may be plain JSONL or zstd (.jsonl.zstd); "-" reads standard input.
`

// env is what a command reads and writes.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one of dshtrace's commands.
type command struct {
	name string
	// synopsis follows the name in the command's usage line.
	synopsis string
	// about says what the command does, for its --help.
	about string
	run   func(e *env, args []string) error
}

// commands are dshtrace's commands, by name.
var commands = map[string]command{}

func init() {
	for _, c := range []command{
		{"check", "[--json] [--session ID] FILE...",
			"Validates each log against the dsh format's invariants. Exit 1 on violations, 2 if a file cannot be read.", runCheck},
		{"derive", "[--json] [--before-step T.S] [--session ID] FILE",
			"Prints the model-visible history of a session.", runDerive},
		{"turns", "[--session ID] FILE",
			"Prints an outline of the turns, steps and tool calls.", runTurns},
		{"query", "FILE (--turn N | --call-id ID | --sources SEQ [--transitive]) [--session ID]",
			"Prints the physical rows behind a turn, a tool call or a seq's citations. Exit 1 when no row matches.", runQuery},
		{"spans", "[--json] [--otlp-endpoint URL] [--agent-name NAME] [--capture-content] [--session ID] FILE",
			"Prints (or sends) the trace of every turn; turns never ended close as dangling.", runSpans},
		{"replay", "[-o FILE.html] [--jaeger URL] [--no-content] [--session ID] FILE",
			"Writes one self-contained HTML page of the session.", runReplay},
		{"findings", "[--json] [--loop-repeats N] [--error-streak N] [--retries N] [--max-steps N] [--max-tokens N] [--max-cost USD] [--max-duration D] [--session ID] FILE|ROOT...",
			"Lists what went wrong in each turn (tool loops, error streaks, unanswered calls, budgets), as the turn_state connector finds it. Exit 1 on any finding, 0 on none, 2 if an input cannot be read.", runFindings},
		{"export", "[--finding NAME] [--reason KIND] [--agent NAME] [--model NAME] [-o FILE] [--session ID] FILE|ROOT...",
			"Writes the model calls of the turns selected by finding, end reason, agent or model (every turn when no filter is given; all filters given must hold) as JSONL, one call a line: the request as the model saw it (derive --before-step's history), the tools offered, the answer and the seqs it was built from. Exit 1 when no call matched, 2 if an input cannot be read.", runExport},
		{"serve", "[--addr 127.0.0.1:7788] [--allow-host NAME] [--jaeger URL] [--no-content] [--turns-per-page N] [--max-page-memory MiB] ROOT...",
			"Serves the replay pages of every session under dsh session roots until interrupted.", runServe},
	} {
		commands[c.name] = c
	}
}

// exitError carries a process exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// errHelp ends a command that printed its usage on request.
var errHelp = errors.New("help requested")

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code. Every
// error is one line, "dshtrace COMMAND: …", on standard error.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dshtrace: unknown command %q (dshtrace --help lists them)\n", args[0])
		return 2
	}
	err := c.run(&env{stdin: stdin, stdout: stdout, stderr: stderr}, args[1:])
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	code := 2
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintf(stderr, "dshtrace %s: %v\n", c.name, err)
	return code
}
