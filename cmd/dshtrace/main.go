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
  check [--json] FILE...                      validate logs; exit 1 on violations, 2 if unreadable
  derive [--json] [--before-step T.S] FILE    the model-visible history
  turns FILE                                  an outline of turns, steps and tool calls
  query FILE (--turn N | --call-id ID | --sources SEQ [--transitive])
                                              the physical rows behind a turn, call or seq
  spans [--json] [--otlp-endpoint URL] FILE   the trace of every turn (turns never ended close as dangling)
  replay [-o FILE.html] [--jaeger URL] [--no-content] FILE
                                              one self-contained HTML page of the session
  serve [--addr 127.0.0.1:7788] [--jaeger URL] [--no-content] ROOT...
                                              the replay pages of every session under dsh session roots

FILE may be plain JSONL or zstd (.jsonl.zstd); "-" reads standard input.
`

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

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "check":
		err = runCheck(args[1:], stdin, stdout)
	case "derive":
		err = runDerive(args[1:], stdin, stdout)
	case "turns":
		err = runTurns(args[1:], stdin, stdout)
	case "query":
		err = runQuery(args[1:], stdin, stdout)
	case "spans":
		err = runSpans(args[1:], stdin, stdout)
	case "replay":
		err = runReplay(args[1:], stdin, stdout)
	case "serve":
		err = runServe(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "dshtrace: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "dshtrace: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "dshtrace: %v\n", err)
	return 2
}

// openInput opens FILE, or standard input for "-".
func openInput(name string, stdin io.Reader) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(stdin), nil
	}
	return os.Open(name)
}
