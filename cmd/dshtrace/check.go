package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// checkJSON is the --json document of one file.
type checkJSON struct {
	File string `json:"file"`
	// Format is the format as the text summary names it ("v4", "v4
	// (inferred)", "seed"); Version its number, null for the seed dialect
	// and a file whose format is unknown.
	Format        string                   `json:"format"`
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

func runCheck(e *env, args []string) error {
	fs := newFlags("check")
	asJSON := fs.Bool("json", false, "one JSON object per file")
	session := sessionFlag(fs)
	files, err := parseArgs(e, fs, args, someFiles)
	if err != nil {
		return err
	}
	code := 0
	for _, name := range files {
		rep, err := checkFile(name, e.stdin, *session)
		switch {
		case err != nil:
			code = 2
			// What was read before the failure is still reported.
			if rep != nil && !*asJSON {
				writeViolations(e.stdout, name, rep)
			}
			fmt.Fprintf(e.stderr, "dshtrace check: %v\n", err)
			if *asJSON {
				doc := checkJSON{File: name, Error: err.Error()}
				if rep != nil {
					doc = checkDoc(name, rep)
					doc.Error = err.Error()
				}
				writeJSONLine(e.stdout, emptyLists(doc))
			}
			continue
		case len(rep.Violations) > 0 && code == 0:
			code = 1
		}
		if *asJSON {
			writeJSONLine(e.stdout, checkDoc(name, rep))
		} else {
			writeCheck(e.stdout, name, rep)
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
	doc := checkJSON{File: name, Format: rep.Format.String(), Events: rep.Events, Turns: rep.Turns,
		DanglingTurns: rep.DanglingTurns, Violations: rep.Violations}
	if rep.Format.Known && !rep.Format.Seed {
		v := rep.Format.Version
		doc.Version = &v
	}
	if t := rep.Tail; t != nil {
		doc.TornTail = &tornJSON{Line: t.Line, Bytes: t.Bytes, Frame: t.Frame}
	}
	return emptyLists(doc)
}

// emptyLists gives a document's nil lists as empty ones.
func emptyLists(doc checkJSON) checkJSON {
	if doc.Turns == nil {
		doc.Turns = []sessionlog.TurnSummary{}
	}
	if doc.DanglingTurns == nil {
		doc.DanglingTurns = []int64{}
	}
	if doc.Violations == nil {
		doc.Violations = []sessionlog.Violation{}
	}
	return doc
}

// writeCheck prints a file's report: a line per violation, the torn tail,
// and a summary line.
func writeCheck(w io.Writer, name string, rep *sessionlog.Report) {
	writeViolations(w, name, rep)
	if t := rep.Tail; t != nil {
		fmt.Fprintln(w, tailNote(name, t))
	}
	var parts []string
	parts = append(parts, rep.Format.String())
	if ss := reportSessions(rep); len(ss) > 1 {
		parts = append(parts, fmt.Sprintf("%s (%s)", plural(len(ss), "session"), strings.Join(ss, ", ")))
	}
	parts = append(parts, plural(rep.Events, "event"), plural(len(rep.Turns), "turn"))
	if d := rep.DanglingTurns; len(d) > 0 {
		parts = append(parts, fmt.Sprintf("%s %v (never ended: cause end_of_input)", nounOf(len(d), "dangling turn"), d))
	}
	parts = append(parts, plural(len(rep.Violations), "violation"))
	fmt.Fprintf(w, "%s: %s\n", name, strings.Join(parts, ", "))
}

// writeViolations prints a line per violation.
func writeViolations(w io.Writer, name string, rep *sessionlog.Report) {
	for _, v := range rep.Violations {
		fmt.Fprintf(w, "%s:%d: %s\n", name, v.Line, v)
	}
}

// reportSessions are the sessions a report's turns name, in order.
func reportSessions(rep *sessionlog.Report) []string {
	var out []string
	for _, t := range rep.Turns {
		if t.Session != "" && !slices.Contains(out, t.Session) {
			out = append(out, t.Session)
		}
	}
	return out
}

// checkFile checks one input: every row, or with session those of that
// session only. A report comes with an error when the input could not be
// read to its end or has no readable row.
func checkFile(name string, stdin io.Reader, session string) (*sessionlog.Report, error) {
	f, err := openInput(name, stdin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	var in *input
	if session != "" {
		if in, err = newInput(name, f, session, nil, false); err != nil {
			return nil, err
		}
		defer in.Close()
		r = &sessionRows{in: in}
	}
	rep, err := sessionlog.Check(r, sessionlog.Options{})
	if err != nil {
		if in == nil || !strings.HasPrefix(err.Error(), name+":") {
			err = fmt.Errorf("%s: %v", name, err)
		}
		return rep, err
	}
	if in != nil && rep.Tail == nil {
		rep.Tail = in.Tail()
	}
	if rep.Events == 0 && rep.Header == nil {
		var first *sessionlog.Violation
		if len(rep.Violations) > 0 {
			first = &rep.Violations[0]
		}
		unread := 0
		if first != nil {
			unread = rep.Rows
		}
		return rep, fmt.Errorf("%s: %s", name, nothingRead(rep.Rows, unread, first, rep.Tail, false))
	}
	return rep, nil
}

// sessionRows is the input's rows of one session as JSONL again, each
// other row a blank line so that line numbers stay those of the input.
type sessionRows struct {
	in   *input
	line int // the input line written last
	buf  []byte
	err  error
}

func (s *sessionRows) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		row, err := s.in.Next()
		if err != nil {
			s.err = err
			continue
		}
		for ; s.line < row.Line-1; s.line++ {
			s.buf = append(s.buf, '\n')
		}
		s.buf = append(append(s.buf, row.Bytes...), '\n')
		s.line = row.Line
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
