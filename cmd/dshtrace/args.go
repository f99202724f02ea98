package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// arity is how many positional arguments a command takes.
type arity int

const (
	oneFile   arity = iota // exactly one FILE
	someFiles              // one FILE or more
	someRoots              // one ROOT or more
)

// newFlags is a command's flag set; its errors are returned, never printed.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// sessionFlag adds --session, which every command that reads logs takes.
func sessionFlag(fs *flag.FlagSet) *string {
	return fs.String("session", "", "read only the rows of session `ID` (an input may be a stream of several)")
}

// parseArgs parses a command's flags, before, between or after its
// positional arguments, and checks how many of those there are. --help
// prints the command's usage on e.stdout and returns errHelp; "--" ends
// the flags.
func parseArgs(e *env, fs *flag.FlagSet, args []string, want arity) ([]string, error) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(e.stdout, fs)
			return nil, errHelp
		}
		if err != nil {
			return nil, &exitError{code: 2, err: flagError(err)}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...) // after "--" everything is a file
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if err := checkArity(pos, want); err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("%v (dshtrace %s --help)", err, fs.Name())}
	}
	return pos, nil
}

// checkArity says, in the one wording every command uses, what is missing
// or too much.
func checkArity(pos []string, want arity) error {
	switch {
	case want == oneFile && len(pos) != 1:
		return fmt.Errorf("want exactly one FILE, got %d", len(pos))
	case want == someFiles && len(pos) == 0:
		return errors.New("want at least one FILE, got none")
	case want == someRoots && len(pos) == 0:
		return errors.New("want at least one ROOT (a dsh session root, e.g. ~/.dsh/sessions), got none")
	}
	return nil
}

// flagError words the flag package's errors with the flags' own spelling
// ("--name").
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", strings.TrimPrefix(name, "-"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("flag --%s needs a value", strings.TrimPrefix(name, "-"))
	}
	return errors.New(strings.Replace(msg, " for flag -", " for flag --", 1))
}

// writeUsage prints a command's usage line, what it does, and its flags.
func writeUsage(w io.Writer, fs *flag.FlagSet) {
	c := commands[fs.Name()]
	fmt.Fprintf(w, "usage: dshtrace %s %s\n\n%s\n\nflags:\n", c.name, c.synopsis, c.about)
	var lines [][2]string
	width := 0
	fs.VisitAll(func(f *flag.Flag) {
		arg, help := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if arg != "" {
			name += " " + arg
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "-" {
			help += fmt.Sprintf(" (default %s)", d)
		}
		lines = append(lines, [2]string{name, help})
		width = max(width, len(name))
	})
	for _, l := range lines {
		fmt.Fprintf(w, "  %-*s  %s\n", width, l[0], l[1])
	}
}
