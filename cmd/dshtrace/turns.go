package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// runTurns prints an outline of FILE's turns: per turn its end reason and
// duration, per step the model, tokens and attempts, per tool call its
// outcome and latency, with dispatch sub-calls under their parent call.
// Turns are printed as they close, so memory is bounded by one turn.
func runTurns(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("turns", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("turns: %v", err)}
	}
	if fs.NArg() != 1 {
		return &exitError{code: 2, err: errors.New("turns: want exactly one FILE")}
	}
	name := fs.Arg(0)
	f, err := openInput(name, stdin)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("turns: %v", err)}
	}
	defer f.Close()
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	if err := outlineStream(name, f, w); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("turns: %v", err)}
	}
	return nil
}

// outlineStream reads one input and writes the outline of every session in
// it. Wrapped rows (live transports) may interleave several sessions; each
// gets its own Outliner and a "session ID" line when output switches to it.
// Where a fork's inherited prefix ends (§2, §10.5) a line says so: the
// turns printed above it were copied from the parent session.
func outlineStream(name string, r io.Reader, w io.Writer) error {
	dec, err := sessionlog.NewDecoder(r, sessionlog.Options{})
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	defer dec.Close()
	outliners := map[string]*Outliner{}
	var order []string
	printed, shown := 0, ""
	emit := func(key string, t *Turn) {
		if key != "" && key != shown {
			fmt.Fprintf(w, "session %s\n", key)
		}
		shown = key
		writeTurn(w, t)
		printed++
	}
	seedCut := int64(-1) // v0/v1: the header's seedLength, until the cut is passed
	inherited := func(key string, seq int64) {
		parent := "the parent session"
		if h := dec.Header(); key == "" && h != nil && h.ParentSession != "" {
			parent = "parent session " + h.ParentSession
		}
		fmt.Fprintf(w, "(the turns above are inherited from %s; this session's own events start at seq %d)\n", parent, seq)
	}
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		if row.Kind == sessionlog.RowHeader && row.Header.HasSeedLength && row.Header.SeedLength > 0 {
			seedCut = row.Header.SeedLength
		}
		key := sessionKey(row)
		o := outliners[key]
		if o == nil && len(row.Events) > 0 {
			o = NewOutliner()
			outliners[key] = o
			order = append(order, key)
		}
		for i := range row.Events {
			e := &row.Events[i]
			if key == "" && seedCut > 0 && e.Seq >= seedCut {
				inherited(key, seedCut)
				seedCut = -1
			}
			if t := o.Add(e); t != nil {
				emit(key, t)
			}
			if e.Type == "session/end-seed" && e.Inherited { // v2+: the last tagged marker is the cut
				inherited(key, e.Seq)
			}
		}
	}
	for _, key := range order {
		if t := outliners[key].Close(); t != nil {
			emit(key, t)
		}
	}
	if printed == 0 {
		fmt.Fprintln(w, "no turns")
	}
	if t := dec.Tail(); t != nil {
		fmt.Fprintf(w, "note: %s: %s\n", name, t)
	}
	return nil
}

// sessionKey names the session a row belongs to: a file is one session
// whatever its header says (""), a wrapped row names its own.
func sessionKey(r *sessionlog.Row) string {
	if r.Wrapper == sessionlog.WrapNone {
		return ""
	}
	return r.SessionID
}

// writeTurn writes one turn as aligned text: a turn line, then its steps and
// calls indented beneath it. Step lines are aligned with each other, and so
// are call lines.
func writeTurn(w io.Writer, t *Turn) {
	ms, ok, clamped, back := t.Duration()
	fmt.Fprintf(w, "turn %d  %s  %s\n", t.Number, reasonText(t), durationText(ms, ok, clamped, back))
	const steps, calls = 0, 1
	var tb tables
	for _, s := range t.Steps {
		label := fmt.Sprintf("  step %d", s.Number)
		if !s.Ended {
			label += " (open)"
		}
		in, cache, out := "in -", "cache -", "out -"
		if s.HasUsage {
			in = fmt.Sprintf("in %d", s.Tokens.Input)
			cache = fmt.Sprintf("cache %d", s.Tokens.Cache)
			out = fmt.Sprintf("out %d", s.Tokens.Output)
		}
		tb.add(steps, label, modelText(s.Provider, s.Model), in, cache, out, fmt.Sprintf("attempts %d", s.Attempts))
		for _, c := range s.Calls {
			addCall(&tb, calls, c, "    ")
		}
	}
	tb.write(w)
}

// addCall adds a call line and, indented beneath it, its sub-calls'.
func addCall(tb *tables, table int, c *Call, indent string) {
	outcome := c.Outcome()
	if outcome == "error" && c.ErrorCode != "" {
		outcome = fmt.Sprintf("error (%s)", c.ErrorCode)
	}
	var latency string
	switch ms, ok, clamped, back := c.Latency(); {
	case ok:
		latency = durationText(ms, ok, clamped, back)
	case c.Settled && !c.Started && c.Sub:
		latency = "- (no dispatch start)"
	case c.Settled && !c.Started:
		latency = "- (no tool/call)"
	default:
		latency = "-"
	}
	tool := c.Tool
	if tool == "" {
		tool = "-"
	}
	id := c.ID
	if id == "" {
		id = "-"
	}
	tb.add(table, indent+id, tool, outcome, latency)
	for _, sub := range c.Subs {
		addCall(tb, table, sub, indent+"  ")
	}
}

// reasonText renders a TurnEndReason: its kind with the abort cause or
// error code, or "open" for a turn without turn/end.
func reasonText(t *Turn) string {
	if !t.Ended {
		return "open"
	}
	r := t.Reason
	kind := r.Kind
	if kind == "" {
		kind = "unknown"
	}
	switch {
	case r.Kind == "aborted" && r.Cause == "hook" && r.HookReason != "":
		return fmt.Sprintf("aborted (hook: %q)", r.HookReason)
	case r.Kind == "aborted" && r.Cause != "":
		return fmt.Sprintf("aborted (%s)", r.Cause)
	case r.Kind == "error" && r.Failure != nil && r.Failure.Code != "":
		return fmt.Sprintf("error (%s)", r.Failure.Code)
	}
	return kind
}

// durationText renders a clamped duration; a clamped one says how far the
// clock went back, an unknown one is "-".
func durationText(ms int64, ok, clamped bool, back int64) string {
	if !ok {
		return "-"
	}
	d := time.Duration(ms) * time.Millisecond
	if clamped {
		return fmt.Sprintf("%s (clamped: clock went back %s)", d, time.Duration(back)*time.Millisecond)
	}
	return d.String()
}

// modelText renders provider/model, whichever part is known, or "-".
func modelText(provider, model string) string {
	switch {
	case provider != "" && model != "":
		return provider + "/" + model
	case provider != "" || model != "":
		return provider + model
	}
	return "-"
}

// tables lays out lines of cells, each line belonging to one of several
// tables whose columns are aligned independently, in the order added.
type tables struct {
	lines  []tableLine
	widths map[int][]int
}

// tableLine is one line of a table.
type tableLine struct {
	table int
	cells []string
}

// add appends a line of cells to table.
func (tb *tables) add(table int, cells ...string) {
	if tb.widths == nil {
		tb.widths = map[int][]int{}
	}
	ws := tb.widths[table]
	for i, c := range cells {
		if i == len(ws) {
			ws = append(ws, 0)
		}
		ws[i] = max(ws[i], len([]rune(c)))
	}
	tb.widths[table] = ws
	tb.lines = append(tb.lines, tableLine{table, cells})
}

// write renders every line, cells padded to their column's width.
func (tb *tables) write(w io.Writer) {
	var b strings.Builder
	for _, l := range tb.lines {
		b.Reset()
		ws := tb.widths[l.table]
		for i, c := range l.cells {
			b.WriteString(c)
			if i < len(l.cells)-1 {
				b.WriteString(strings.Repeat(" ", ws[i]-len([]rune(c))+2))
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
	}
}
