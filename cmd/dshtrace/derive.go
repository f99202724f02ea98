package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog"
)

func runDerive(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("derive", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print a JSON array of {seq, role, content}")
	beforeStep := fs.String("before-step", "", "TURN.STEP: the history the model saw when that step's model call began")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("derive: exactly one FILE expected")}
	}
	var before *sessionlog.StepRef
	if *beforeStep != "" {
		ref, err := parseStepRef(*beforeStep)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		before = &ref
	}
	name := fs.Arg(0)
	f, err := openInput(name, stdin)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer f.Close()
	h, err := sessionlog.Derive(f, sessionlog.Options{}, before)
	if errors.Is(err, sessionlog.ErrStepNotFound) {
		return &exitError{code: 1, err: fmt.Errorf("%s: %w", name, err)}
	}
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w", name, err)}
	}
	if *asJSON {
		b, err := json.Marshal(h)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	}
	for _, m := range h.All() {
		fmt.Fprintf(stdout, "[%d] %s%s\n", m.Seq(), m.Role(), describeOrigin(m))
		for _, line := range renderContent(m.Content()) {
			fmt.Fprintf(stdout, "    %s\n", line)
		}
	}
	return nil
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
