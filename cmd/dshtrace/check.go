package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// checkJSON is the --json document of one file.
type checkJSON struct {
	File          string                   `json:"file"`
	Version       *int                     `json:"version"`
	Events        int                      `json:"events"`
	Turns         []sessionlog.TurnSummary `json:"turns"`
	DanglingTurns []int64                  `json:"dangling_turns"`
	Violations    []sessionlog.Violation   `json:"violations"`
	TornTail      *tornJSON                `json:"torn_tail,omitempty"`
	Error         string                   `json:"error,omitempty"`
}

type tornJSON struct {
	Line  int  `json:"line"`
	Bytes int  `json:"bytes"`
	Frame bool `json:"frame"`
}

func runCheck(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "one JSON object per file")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if fs.NArg() == 0 {
		return &exitError{code: 2, err: errors.New("check: no FILE given")}
	}
	code := 0
	for _, name := range fs.Args() {
		rep, err := checkFile(name, stdin)
		switch {
		case err != nil:
			code = 2
			if *asJSON {
				writeJSONLine(stdout, checkJSON{File: name, Turns: []sessionlog.TurnSummary{}, DanglingTurns: []int64{},
					Violations: []sessionlog.Violation{}, Error: err.Error()})
			} else {
				fmt.Fprintf(stdout, "%s: cannot read: %v\n", name, err)
			}
			continue
		case len(rep.Violations) > 0 && code == 0:
			code = 1
		}
		if *asJSON {
			writeJSONLine(stdout, checkDoc(name, rep))
		} else {
			writeCheck(stdout, name, rep)
		}
	}
	if code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// checkDoc is a file's report as check --json prints it: every list
// present, empty rather than null.
func checkDoc(name string, rep *sessionlog.Report) checkJSON {
	doc := checkJSON{File: name, Events: rep.Events, Turns: rep.Turns, DanglingTurns: rep.DanglingTurns, Violations: rep.Violations}
	if rep.Format.Known && !rep.Format.Seed {
		v := rep.Format.Version
		doc.Version = &v
	}
	if doc.Turns == nil {
		doc.Turns = []sessionlog.TurnSummary{}
	}
	if doc.DanglingTurns == nil {
		doc.DanglingTurns = []int64{}
	}
	if doc.Violations == nil {
		doc.Violations = []sessionlog.Violation{}
	}
	if t := rep.Tail; t != nil {
		doc.TornTail = &tornJSON{Line: t.Line, Bytes: t.Bytes, Frame: t.Frame}
	}
	return doc
}

// writeCheck prints a file's report: a line per violation, the torn tail,
// and a summary line.
func writeCheck(w io.Writer, name string, rep *sessionlog.Report) {
	for _, v := range rep.Violations {
		fmt.Fprintf(w, "%s:%d: %s\n", name, v.Line, v)
	}
	if t := rep.Tail; t != nil {
		fmt.Fprintf(w, "%s:%d: note: %s\n", name, t.Line, t)
	}
	open := ""
	if len(rep.DanglingTurns) > 0 {
		open = fmt.Sprintf(", dangling turns %v (never ended: cause end_of_input)", rep.DanglingTurns)
	}
	fmt.Fprintf(w, "%s: %s, %d events, %d turns%s, %d violations\n",
		name, rep.Format, rep.Events, len(rep.Turns), open, len(rep.Violations))
}

func checkFile(name string, stdin io.Reader) (*sessionlog.Report, error) {
	f, err := openInput(name, stdin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sessionlog.Check(f, sessionlog.Options{})
}

func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are marshalled
	}
	w.Write(append(b, '\n'))
}
