package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// runTurns prints an outline of FILE's turns: per turn its end reason,
// duration and cost, per step the model, tokens, cost and attempts, per
// tool call its outcome and latency, with dispatch sub-calls under their
// parent call. Tokens read as on the spans: "in" counts every prompt token,
// cached ones included, and "cache" says how many of them were read from
// and written to the provider's cache. What no model call reported —
// usage, or a price for its model — is "-", never 0.
// The turns are the turn engine's, as `spans` and the connector see them;
// each is printed as it closes, so memory is bounded by the open turns
// (and the engine's reorder window), not by the log.
func runTurns(e *env, args []string) error {
	fs := newFlags("turns")
	session := sessionFlag(fs)
	files, err := parseArgs(e, fs, args, oneFile)
	if err != nil {
		return err
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
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	return outlineStream(in, w)
}

// outlineStream reads one input and writes the outline of every session in
// it, from the turns the turn engine closes: each is printed as soon as it
// closes, the turns still open at the end of the input last. Wrapped rows
// (live transports) may interleave several sessions; a "session ID" line
// says when the output switches to another. Where a fork's inherited
// prefix ends (docs/format.md §3, §11.5) a line says so: the turns printed above it were
// copied from the parent session.
func outlineStream(in *input, w io.Writer) error {
	// The whole log is outlined, inherited prefix included. Arrival time
	// plays no part: nothing is swept, what is open at the end is flushed.
	o := &outliner{w: w, in: in, eng: turnengine.New(turnengine.Config{KeepInherited: true}),
		now: time.Unix(0, 0), seedCut: -1, seen: map[string]int{}}
	for {
		row, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		o.row(row)
	}
	o.finish()
	return nil
}

// outliner prints the turns of one log as the engine closes them.
type outliner struct {
	w   io.Writer
	in  *input
	eng *turnengine.Engine
	now time.Time
	// printed counts the turns printed; shown is the session of the last.
	printed int
	shown   string
	// seedCut is the header's seedLength (v0/v1) until the cut is passed.
	seedCut int64
	// seen numbers the sessions in order of their first event.
	seen map[string]int
}

// row feeds a row's events to the engine, printing the turns they close
// and where a fork's inherited prefix ends.
func (o *outliner) row(row *sessionlog.Row) {
	if row.Kind == sessionlog.RowHeader && row.Header.HasSeedLength && row.Header.SeedLength > 0 {
		o.seedCut = row.Header.SeedLength
	}
	key := sessionKey(row)
	var header *sessionlog.Header
	if key == "" {
		header = o.in.Header() // a file's header is its own session's only
	}
	if _, ok := o.seen[key]; !ok && len(row.Events) > 0 {
		o.seen[key] = len(o.seen)
	}
	for i := range row.Events {
		e := &row.Events[i]
		if key == "" && o.seedCut > 0 && e.Seq >= o.seedCut {
			o.inherited(key, o.seedCut)
			o.seedCut = -1
		}
		o.eng.Ingest(turnengine.Input{SessionID: key, Event: e, Format: o.in.Format(), Header: header}, o.now)
		o.emit(o.eng.Drain())
		if e.Type == "session/end-seed" && e.Inherited { // v2+: the last tagged marker is the cut
			o.inherited(key, e.Seq)
		}
	}
}

// emit prints closed turns, each session's name before its first.
func (o *outliner) emit(turns []*turnengine.Turn) {
	for _, t := range turns {
		if t.Late != nil {
			continue // a turn/end of a turn not in the outline (its start was never read)
		}
		if t.SessionID != "" && t.SessionID != o.shown {
			fmt.Fprintf(o.w, "session %s\n", t.SessionID)
		}
		o.shown = t.SessionID
		writeTurn(o.w, t)
		o.printed++
	}
}

// inherited says where a fork's inherited turns end.
func (o *outliner) inherited(key string, seq int64) {
	parent := "the parent session"
	if h := o.in.Header(); key == "" && h != nil && h.ParentSession != "" {
		parent = "parent session " + h.ParentSession
	}
	fmt.Fprintf(o.w, "(the turns above are inherited from %s; this session's own events start at seq %d)\n", parent, seq)
}

// finish closes the turns still open at the end of the log as dangling
// (end_of_input) and prints them, by session in the order the sessions
// appeared.
func (o *outliner) finish() {
	o.eng.Flush(turnengine.CauseEndOfInput, o.now)
	open := o.eng.Drain() // in the order they opened
	slices.SortStableFunc(open, func(a, b *turnengine.Turn) int { return o.seen[a.SessionID] - o.seen[b.SessionID] })
	o.emit(open)
	if o.printed == 0 {
		fmt.Fprintln(o.w, "no turns")
	}
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
func writeTurn(w io.Writer, t *turnengine.Turn) {
	duration := "-" // a dangling turn has no end
	if !t.Dangling() {
		duration = durationText(t.StartTime, t.LoggedEndTime)
	}
	fmt.Fprintf(w, "turn %d  %s  %s  %s\n", t.Number, reasonText(t), duration, turnCost(t))
	const steps, calls = 0, 1
	var tb tables
	for _, s := range t.Steps {
		label := fmt.Sprintf("  step %d", s.Number)
		if s.Open {
			label += " (open)"
		}
		in, cache, out := "in -", "cache -", "out -"
		if u, ok := stepUsage(s); ok {
			in = fmt.Sprintf("in %d", u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens)
			cache = fmt.Sprintf("cache read %d write %d", u.CacheReadTokens, u.CacheWriteTokens)
			out = fmt.Sprintf("out %d", u.OutputTokens)
		}
		tb.add(steps, label, stepModel(s), in, cache, out, stepCost(s), fmt.Sprintf("attempts %d", len(s.Attempts)))
		for _, c := range s.Tools {
			addCall(&tb, calls, c, "    ")
		}
	}
	tb.write(w)
	for _, f := range t.Findings {
		fmt.Fprintf(w, "  finding %s: %s %s\n", f.Name, f.Explanation, evidenceText(f))
	}
}

// stepUsage sums the usage of a step's attempts, each counted once (docs/format.md §9.2:
// the engine gives a committed attempt its message's usage); ok is false
// when no attempt reported any.
func stepUsage(s *turnengine.Step) (u sessionlog.Usage, ok bool) {
	for _, a := range s.Attempts {
		if a.Usage == nil {
			continue
		}
		u.InputTokens += a.Usage.InputTokens
		u.CacheReadTokens += a.Usage.CacheReadTokens
		u.CacheWriteTokens += a.Usage.CacheWriteTokens
		u.OutputTokens += a.Usage.OutputTokens
		ok = true
	}
	return u, ok
}

// turnCost renders a turn's cost: the sum over its priced model calls,
// with how many calls with usage had no price; "cost -" when none had one.
func turnCost(t *turnengine.Turn) string {
	if t.PricedCalls == 0 {
		return "cost -"
	}
	c := "cost " + usd(t.Cost.Total())
	if t.UnpricedCalls > 0 {
		c += fmt.Sprintf(" (+%d unpriced)", t.UnpricedCalls)
	}
	return c
}

// stepCost renders the cost of a step's priced attempts, or "cost -".
func stepCost(s *turnengine.Step) string {
	var c pricing.Cost
	priced := false
	for _, a := range s.Attempts {
		if a.Priced {
			c, priced = c.Add(a.Cost), true
		}
	}
	if !priced {
		return "cost -"
	}
	return "cost " + usd(c.Total())
}

// usd writes an amount of dollars in full, without binary noise.
func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', -1, 64) }

// stepModel renders the model that served a step (docs/format.md §9.2): the committed
// attempt's, else the last attempt's (the latest request model before it),
// as provider/model, whichever part is known, or "-".
func stepModel(s *turnengine.Step) string {
	var a *turnengine.Attempt
	if n := len(s.Attempts); n > 0 {
		a = s.Attempts[n-1]
	}
	for _, c := range slices.Backward(s.Attempts) {
		if c.Committed {
			a = c
			break
		}
	}
	switch {
	case a == nil || a.Provider == "" && a.Model == "":
		return "-"
	case a.Provider != "" && a.Model != "":
		return a.Provider + "/" + a.Model
	}
	return a.Provider + a.Model
}

// addCall adds a call line and, indented beneath it, its sub-calls'.
func addCall(tb *tables, table int, c *turnengine.ToolCall, indent string) {
	outcome := c.Outcome
	if c.ErrorCode != "" {
		outcome = fmt.Sprintf("%s (%s)", outcome, c.ErrorCode)
	}
	var latency string
	switch {
	case c.Outcome == "unknown":
		latency = "-"
	case c.NotStarted:
		latency = "- (no tool/call)"
	default:
		latency = durationText(c.LoggedStartTime, c.LoggedEndTime)
	}
	tool := c.Name
	if tool == "" {
		tool = "-"
	}
	id := c.CallID
	if c.SubCallID != "" {
		id = c.SubCallID
	}
	if id == "" {
		id = "-"
	}
	tb.add(table, indent+id, tool, outcome, latency)
	for _, sub := range c.SubCalls {
		addCall(tb, table, sub, indent+"  ")
	}
}

// reasonText renders a TurnEndReason: its kind with the abort cause or
// error code; a turn dsh never closed is "dangling" with the cause the
// engine closed it for, as its trace says (dsh.turn.end_reason,
// dsh.dangling.cause).
func reasonText(t *turnengine.Turn) string {
	if t.Dangling() {
		return fmt.Sprintf("dangling (%s)", t.DanglingCause)
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

// durationText renders the time from one logged time to another, clamped
// at 0 (docs/format.md §4: time is not monotonic); a clamped one says how far the clock
// went back.
func durationText(from, to int64) string {
	if to < from {
		return fmt.Sprintf("%s (clamped: clock went back %s)", time.Duration(0), time.Duration(from-to)*time.Millisecond)
	}
	return (time.Duration(to-from) * time.Millisecond).String()
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
