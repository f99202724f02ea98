package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog"
)

func runDerive(e *env, args []string) error {
	fs := newFlags("derive")
	asJSON := fs.Bool("json", false, "print a JSON array of {seq, role, content}")
	beforeStep := fs.String("before-step", "", "the history the model saw when step `TURN.STEP`'s model call began")
	session := sessionFlag(fs)
	files, err := parseArgs(e, fs, args, oneFile)
	if err != nil {
		return err
	}
	var before *sessionlog.StepRef
	if *beforeStep != "" {
		ref, err := parseStepRef(*beforeStep)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		before = &ref
	}
	name := files[0]
	f, err := openInput(name, e.stdin)
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := newInput(name, f, *session, e.stderr, false)
	if err != nil {
		return err
	}
	defer in.Close()
	h, derived, err := derive(in, before)
	if errors.Is(err, sessionlog.ErrStepNotFound) {
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
	}
	if err != nil {
		return err
	}
	if ss := in.Sessions(); *session == "" && len(ss) > 1 {
		fmt.Fprintf(e.stderr, "%s: note: %s in the input (%s): the history of %s; --session ID picks another\n",
			name, plural(len(ss), "session"), strings.Join(ss, ", "), derived)
	}
	if *asJSON {
		b, err := json.Marshal(h)
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(append(b, '\n'))
		return err
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	for _, m := range h.All() {
		fmt.Fprintf(w, "[%d] %s%s\n", m.Seq(), m.Role(), describeOrigin(m))
		for _, line := range renderContent(m.Content()) {
			if line == "" {
				fmt.Fprintln(w) // no trailing blanks
				continue
			}
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	return nil
}

// derive projects the history of one session of the input (the first,
// unless the input keeps only one): at its end or, with before, when that
// step's first model call began (sessionlog.Derive's rule). It returns
// the session derived.
func derive(in *input, before *sessionlog.StepRef) (sessionlog.History, string, error) {
	d := sessionlog.NewDeriver()
	session, inStep := "", false
	for {
		row, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sessionlog.History{}, session, err
		}
		if len(row.Events) == 0 {
			continue
		}
		id, _ := in.sessionOf(row)
		if session == "" {
			session = id
		} else if id != session {
			continue
		}
		for i := range row.Events {
			e := &row.Events[i]
			if before != nil {
				isStep := e.HasTurn && e.HasStep && e.Turn == before.Turn && e.Step == before.Step
				switch {
				case e.Type == "step/start" && isStep:
					inStep = true
				case inStep && isStep && (e.Type == "assistant/chunk" || e.Type == "assistant/attempt" ||
					e.Type == "assistant/message" || e.Type == "step/end"):
					return d.History(), session, nil
				}
			}
			d.Event(e, in.Format())
		}
	}
	if before != nil {
		return sessionlog.History{}, session, fmt.Errorf("%w: %s", sessionlog.ErrStepNotFound, before)
	}
	return d.History(), session, nil
}

func describeOrigin(m sessionlog.Message) string {
	switch {
	case m.Role() == "assistant" && m.Model() != "":
		return " (" + strings.Trim(m.Provider()+"/"+m.Model(), "/") + ")"
	case m.Role() == "tool":
		s := " (call " + m.ToolCallID()
		if m.IsError() {
			s += ", error"
		}
		return s + ")"
	}
	return ""
}

// parseStepRef reads TURN.STEP.
func parseStepRef(s string) (sessionlog.StepRef, error) {
	t, st, ok := strings.Cut(s, ".")
	tn, err1 := strconv.ParseInt(t, 10, 64)
	sn, err2 := strconv.ParseInt(st, 10, 64)
	if !ok || err1 != nil || err2 != nil || tn < 1 || sn < 1 {
		return sessionlog.StepRef{}, fmt.Errorf("--before-step %q: want TURN.STEP, e.g. 1.2", s)
	}
	return sessionlog.StepRef{Turn: tn, Step: sn}, nil
}

// block is the part of a content block the text rendering shows.
type block struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Arguments  string          `json:"arguments"`
	Input      json.RawMessage `json:"input"`
	ToolCallID string          `json:"toolCallId"`
	IsError    bool            `json:"isError"`
	Content    json.RawMessage `json:"content"`
	ToolName   string          `json:"toolName"`
}

// renderContent turns content blocks into readable lines.
func renderContent(content string) []string {
	var blocks []block
	if err := json.Unmarshal([]byte(content), &blocks); err != nil {
		return []string{content}
	}
	var out []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, strings.Split(b.Text, "\n")...)
		case "reasoning":
			out = append(out, "(reasoning) "+firstLine(b.Text))
		case "tool-call":
			out = append(out, fmt.Sprintf("→ %s %s [%s]", b.Name, b.Arguments, b.ID))
		case "tool_use":
			out = append(out, fmt.Sprintf("→ %s %s [%s]", b.Name, b.Input, b.ID))
		case "tool-result":
			status := "ok"
			if b.IsError {
				status = "error"
			}
			out = append(out, fmt.Sprintf("← %s [%s]", status, b.ToolCallID))
			for _, l := range renderContent(string(b.Content)) {
				out = append(out, "  "+l)
			}
		case "tool-addition", "tool-removal":
			out = append(out, fmt.Sprintf("(%s %s)", b.Type, b.ToolName))
		default:
			out = append(out, "("+b.Type+" block)")
		}
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
