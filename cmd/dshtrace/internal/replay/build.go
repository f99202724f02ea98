package replay

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Options shape a page.
type Options struct {
	// Name is the input's name. A log whose rows name no session (no
	// header, no wrapper) is filed under Session, else under the name's
	// base without extension, as `dshtrace spans` files it, so that the
	// trace ids agree.
	Name, Session string
	// NoContent builds the page without any message or tool content and
	// without what the log's user wrote: no text, arguments, results,
	// prompts, titles, working directory or raw rows are kept.
	NoContent bool
	// AgentName names the agent when a header has no agentPreset (default
	// turnengine.DefaultAgentName).
	AgentName string
	// Prices prices model calls; nil: the engine's built-in table.
	Prices *pricing.Table
	// Client is the client that wrote the sessions (an archive's @clients
	// root, "" for none): their trace ids derive from the client and the
	// session, as the collector's do (docs/operating.md, "Sharing a
	// collector").
	Client string
	// Grow, when set, is told as the page is built how much memory it is
	// estimated to hold so far (Estimate), every growStep rows and at the
	// end; an error from it stops the build and is Build's.
	Grow func(bytes int64) error
}

// growStep is how many rows a build reads between two calls of Grow.
const growStep = 512

// FallbackSession is the session id of a log whose rows name none.
func FallbackSession(name string) string {
	return strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
}

// Rows are the decoded rows of one input, as sessionlog's Decoder gives
// them, or a reader that picks and checks them.
type Rows interface {
	// Next returns the next row, io.EOF at the end; a row is valid until
	// the next call.
	Next() (*sessionlog.Row, error)
	// Format, Header and Tail are what the reader knows of the input so far.
	Format() sessionlog.Format
	Header() *sessionlog.Header
	Tail() *sessionlog.Tail
}

// Build reads one input — a session file, plain or zstd, a seed-dialect
// log or a live stream in any wrapper — and returns its page.
func Build(r io.Reader, opts Options) (*Page, error) {
	dec, err := sessionlog.NewDecoder(r, sessionlog.Options{ReuseRows: true})
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	return BuildRows(dec, opts)
}

// BuildRows builds the page of the rows read from dec.
func BuildRows(dec Rows, opts Options) (*Page, error) {
	b := newBuilder(opts)
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		b.row(row, dec)
		b.drain()
		if b.rowsRead++; b.rowsRead%growStep == 0 {
			if err := b.grow(); err != nil {
				return nil, err
			}
		}
		b.bytesRead += int64(len(row.Bytes))
	}
	// As `dshtrace spans` does: what is still open at the end of the input
	// closes as dangling, cause end_of_input.
	b.eng.Flush(turnengine.CauseEndOfInput, b.now)
	b.drain()
	if t := dec.Tail(); t != nil {
		b.page.Tail = t.String()
	}
	b.finish()
	b.page.rows.done()
	if err := b.grow(); err != nil {
		return nil, err
	}
	return b.page, nil
}

// grow tells Options.Grow the page's estimated memory so far.
func (b *builder) grow() error {
	if b.opts.Grow == nil {
		return nil
	}
	return b.opts.Grow(Estimate(b.rowsRead, b.bytesRead, b.opts.NoContent))
}

// Estimate is the memory a page built from rows rows of bytes bytes
// holds while it is built and after, by measurement: above the heap a
// long synthetic session's page holds (TestEstimate), near the heap's
// peak while it is built. It is a cost per row (its Row, its place in a turn, the turn
// engine's and the deriver's state) and, with content, a share of the
// rows' bytes (messages kept as text, raw rows compressed).
func Estimate(rows, bytes int64, noContent bool) int64 {
	const perRow, perByte, perByteNoContent = 800, 2, 1
	if noContent {
		return rows*perRow + bytes*perByteNoContent
	}
	return rows*perRow + bytes*perByte
}

// builder folds the rows of one input into its page.
type builder struct {
	opts   Options
	page   *Page
	eng    *turnengine.Engine
	now    time.Time
	states map[string]*state
	order  []*state
	last   *state // the session of the latest row
	// early are rows that name no session, read before any session: they
	// go to the first session.
	early []*Row
	// rows are allocated rowSlab at a time.
	rows []Row
	// rowsRead and bytesRead are what has been read of the input.
	rowsRead, bytesRead int64
	names               map[string]string // see name
}

// maxNames bounds the builder's table of names.
const maxNames = 4096

// name returns v as a string of the page's own. The decoder reuses a row's
// memory for the next (sessionlog.Options.ReuseRows), so whatever the page
// keeps of an event is copied first; event types, methods and codes
// repeat, so each is copied once.
func (b *builder) name(v string) string {
	if n, ok := b.names[v]; ok {
		return n
	}
	n := strings.Clone(v)
	if len(b.names) < maxNames {
		b.names[n] = n
	}
	return n
}

// ownHeader copies a header out of its row.
func ownHeader(h *sessionlog.Header) *sessionlog.Header {
	c := *h
	c.ID, c.Cwd, c.ParentSession = strings.Clone(h.ID), strings.Clone(h.Cwd), strings.Clone(h.ParentSession)
	c.Origin, c.AgentPreset = strings.Clone(h.Origin), strings.Clone(h.AgentPreset)
	return &c
}

func newBuilder(opts Options) *builder {
	if opts.AgentName == "" {
		opts.AgentName = turnengine.DefaultAgentName
	}
	return &builder{
		opts: opts,
		page: &Page{Name: opts.Name, NoContent: opts.NoContent},
		// The findings' thresholds are the collector's and the CLI's defaults,
		// so that the page shows the findings they report.
		eng: turnengine.New(turnengine.Config{AgentName: opts.AgentName, KeepInherited: true, Prices: opts.Prices,
			Findings: findings.Defaults()}),
		now:    time.Unix(0, 0), // arrival time plays no part: nothing is swept
		states: map[string]*state{},
		names:  map[string]string{},
	}
}

// state is what the builder follows of one session.
type state struct {
	s   *Session
	cur *turnmodel.Cursor
	d   *sessionlog.Deriver
	// hist mirrors the deriver's history, message for message.
	hist []sessionlog.Message
	// base is the step whose request saw the history last, baseLen that
	// history's length and keep how many of its first messages are still
	// the history's first (a replace since may have changed the rest).
	base          *Step
	baseLen, keep int
	// pending is the step whose request has not begun yet; pendTurn and
	// pendStep the numbers its events carry.
	pending            *Step
	pendTurn, pendStep int64

	turn     *Turn
	step     *Step
	byNumber map[int64]*Turn // the latest turn of each number
	byStart  map[int64]*Turn
	steps    map[int64]*Step // by step/start seq
	gap      *Block
	header   *RequestHeader

	args     map[int64]string // tool/call arguments by seq
	resultOf map[int64]int64  // tool/call seq → the tool/result that closed it
	errors   map[int64]string // tool/result error detail by seq
	settles  map[string]int64 // dispatch settle seq by sub-call id
	asks     map[string]string
	inFlight []int64          // tool/calls awaiting their result
	tools    map[int64]string // tool names of those calls
	children []pendingChild
	models   map[string]bool
}

// pendingChild is a subagent.started seen while a call was in flight.
type pendingChild struct {
	child   string
	callSeq int64
}

func (b *builder) state(id string) *state {
	if st := b.states[id]; st != nil {
		return st
	}
	id = strings.Clone(id) // a view into the row, whose memory the decoder reuses
	s := &Session{ID: id,
		cites: map[int64][]Range{}, callAt: map[string]string{}, ids: map[string]int{},
		Agent: b.opts.AgentName}
	if n := len(b.order); n > 0 {
		s.Prefix = "s" + strconv.Itoa(n+1) + "."
	}
	st := &state{s: s, cur: turnmodel.NewCursor(clientid.Key(b.opts.Client, id)), d: sessionlog.NewDeriver(),
		byNumber: map[int64]*Turn{}, byStart: map[int64]*Turn{}, steps: map[int64]*Step{},
		args: map[int64]string{}, resultOf: map[int64]int64{}, errors: map[int64]string{},
		settles: map[string]int64{}, asks: map[string]string{}, models: map[string]bool{}, tools: map[int64]string{}}
	b.states[id] = st
	b.order = append(b.order, st)
	b.page.Sessions = append(b.page.Sessions, s)
	if len(b.early) > 0 {
		// The rows read before it (the first session's prefix is "": their
		// anchors stand).
		s.Rows = b.early
		st.gap = &Block{Rows: b.early}
		s.Blocks = append(s.Blocks, st.gap)
		b.early = nil
	}
	return st
}

// again numbers a row whose seq an earlier row had (a hostile log's
// repeat): 2, 3, … (its element id is seq-N~2, seq-N~3, …).
func (s *Session) again(seq int64) int32 {
	name := "seq-" + strconv.FormatInt(seq, 10)
	n := max(s.ids[name], 1) + 1
	s.ids[name] = n
	return int32(n)
}

// rowID is a row's element id: seq-N for a row of events (seq-N~2, … for
// a seq an earlier row had), line-N for a row without.
func (s *Session) rowID(r *Row) string {
	switch {
	case r.Count == 0:
		return s.Prefix + "line-" + strconv.Itoa(r.Line)
	case r.again > 0:
		return s.Prefix + "seq-" + strconv.FormatInt(r.Seq, 10) + "~" + strconv.Itoa(int(r.again))
	}
	return s.Prefix + "seq-" + strconv.FormatInt(r.Seq, 10)
}

// anchor returns a unique element id of the session for name: name itself
// the first time, name~2, name~3, … after. (Rows, whose seqs and lines
// are unique, and messages, shown in full once, need no such count.)
func (s *Session) anchor(name string) string {
	n := s.ids[name]
	s.ids[name] = n + 1
	if n > 0 {
		name += "~" + strconv.Itoa(n+1)
	}
	return s.Prefix + name
}

// fallback is the session of rows that name none.
func (b *builder) fallback() string {
	if b.opts.Session != "" {
		return b.opts.Session
	}
	return FallbackSession(b.opts.Name)
}

// sessionOf names the session a row belongs to: a wrapped row's own, else
// the file's header id, else the input's name (as turnengine.Replay
// files them); rows that name none go with the latest session.
func (b *builder) sessionOf(r *sessionlog.Row, dec Rows) *state {
	switch {
	case r.Wrapper == sessionlog.WrapNone && (r.Kind == sessionlog.RowEvent || r.Kind == sessionlog.RowPacked || r.Kind == sessionlog.RowHeader):
		if h := dec.Header(); h != nil && h.ID != "" {
			return b.state(h.ID)
		}
		return b.state(b.fallback())
	case r.SessionID != "":
		return b.state(r.SessionID)
	}
	return b.last // nil before the first session: the row waits for it
}

// row folds one row of the input: the page's row for it, named in its
// session; the row's events; then its place on the page — its turn, or
// the stretch of rows between turns.
func (b *builder) row(r *sessionlog.Row, dec Rows) {
	st := b.sessionOf(r, dec)
	row := b.newRow(r)
	if st == nil {
		// Read before any session: the first session takes it (its prefix
		// is "", so the row's element id stands).
		b.early = append(b.early, row)
		st = &state{s: &Session{ids: map[string]int{}}}
	} else {
		b.last = st
	}
	b.identify(st.s, row, r)
	if r.Kind == sessionlog.RowHeader && r.Header != nil && r.Header.HasSeedLength {
		st.cur.SetFork(clientid.Key(b.opts.Client, r.Header.ParentSession), r.Header.SeedLength)
	}
	turn := b.events(st, row, r, dec)
	if st == b.last {
		b.place(st, row, turn, dec.Format())
	}
}

// rowSlab is how many rows the builder allocates at a time.
const rowSlab = 1024

// newRow is the page's row for an input row: its line, kind, problems
// and, with content, its bytes.
func (b *builder) newRow(r *sessionlog.Row) *Row {
	if len(b.rows) == 0 {
		b.rows = make([]Row, rowSlab)
	}
	row := &b.rows[0]
	b.rows = b.rows[1:]
	row.Line, row.Kind, row.Seq, row.Message = r.Line, r.Kind, -1, -1
	if !b.opts.NoContent && r.Bytes != nil {
		row.raw = b.page.rows.add(r.Bytes)
	}
	if len(r.Problems) > 0 {
		codes := make([]string, len(r.Problems))
		for i, p := range r.Problems {
			codes[i] = b.name(p.Code)
		}
		b.page.problems = append(b.page.problems, codes)
		row.problems = int32(len(b.page.problems))
	}
	return row
}

// identify says what a row is: its first event (the seq that names it), a
// session header, or a row without events (a notification, a line no
// reader reads).
func (b *builder) identify(s *Session, row *Row, r *sessionlog.Row) {
	switch {
	case len(r.Events) > 0:
		e := &r.Events[0]
		row.Seq, row.Count, row.Type, row.Time = e.Seq, int32(len(r.Events)), b.name(e.Type), e.Time
		if s.rowOf.get(e.Seq) != nil {
			row.again = s.again(e.Seq)
		}
	case r.Kind == sessionlog.RowHeader:
		row.Type = "session header"
		if r.Header != nil {
			row.Time = r.Header.CreatedAt
			s.Header = ownHeader(r.Header)
			if b.opts.NoContent {
				s.Header.Cwd = "" // the user's own path
			}
		}
	default:
		row.Type = r.Kind.String()
		if r.Method != "" {
			row.Type = b.name(r.Method)
		}
		if r.Method == "subagent.started" {
			b.subagentStarted(r)
		}
	}
}

// events folds a row's events and returns the turn of its first.
func (b *builder) events(st *state, row *Row, r *sessionlog.Row, dec Rows) *Turn {
	var header *sessionlog.Header
	if r.Wrapper == sessionlog.WrapNone {
		header = dec.Header()
	}
	var turn *Turn
	for i := range r.Events {
		t, step := b.event(st, &r.Events[i], dec.Format(), header, row)
		if i == 0 {
			turn, row.Turn, row.Step = t, 0, step
			if t != nil {
				row.Turn = t.Number
			}
		}
		st.s.rowOf.add(r.Events[i].Seq, row)
	}
	return turn
}

// place puts a row on the page: with its turn — a row without events
// (a notification) with the turn open, if any — else in the stretch of
// rows since the last turn.
func (b *builder) place(st *state, row *Row, turn *Turn, f sessionlog.Format) {
	s := st.s
	s.Format = f
	s.Rows = append(s.Rows, row)
	if turn == nil && row.Count == 0 {
		turn = st.turn
	}
	if turn != nil {
		turn.Rows = append(turn.Rows, row)
		return
	}
	if st.gap == nil {
		st.gap = &Block{}
		s.Blocks = append(s.Blocks, st.gap)
	}
	st.gap.Rows = append(st.gap.Rows, row)
}

// event folds one event: the turn model places it, the deriver takes it
// (after the history of a step about to make its request is kept), the
// engine takes it, and the page's turns, steps and notes follow. It
// returns the turn and step the event belongs to.
func (b *builder) event(st *state, e *sessionlog.Event, f sessionlog.Format, header *sessionlog.Header, row *Row) (*Turn, int64) {
	s := st.s
	s.saw(e)
	m := e.TurnModel(f)
	pl := st.cur.Advance(&m)
	b.snapshot(st, e)
	if b.fold(st, e, f, row) {
		row.Message = e.Seq
	}
	b.eng.Ingest(turnengine.Input{SessionID: s.ID, Event: e, Format: f, Header: header}, b.now)
	s.cite(e)
	t := b.follow(st, e, pl)
	st.awaitRequest(e)
	b.track(st, e, pl, t, row)
	if pl.Kind >= turnmodel.KindStep {
		return t, pl.Step
	}
	return t, 0
}

// saw counts an event and widens the session's span of time to it.
func (s *Session) saw(e *sessionlog.Event) {
	s.Events++
	if !s.HasTimes {
		s.First, s.Last, s.HasTimes = e.Time, e.Time, true
	}
	s.First, s.Last = min(s.First, e.Time), max(s.Last, e.Time)
}

// cite keeps what an event cites (its sourceEventSeqs), as ranges.
func (s *Session) cite(e *sessionlog.Event) {
	if len(e.Sources) == 0 {
		return
	}
	if _, ok := s.cites[e.Seq]; !ok {
		s.citers = append(s.citers, e.Seq)
	}
	s.cites[e.Seq] = ranges(e.Sources)
}

// follow opens and closes the page's turns and steps where the turn model
// does, and returns the turn an event belongs to: the one open, or a
// closed one a late event names.
func (b *builder) follow(st *state, e *sessionlog.Event, pl turnmodel.Place) *Turn {
	var t *Turn
	switch {
	case e.Type == "turn/start" && pl.Kind == turnmodel.KindTurn:
		t = b.openTurn(st, e, pl)
	case pl.Stray == turnmodel.Late:
		t = st.byNumber[e.Turn]
	default:
		t = st.turn
	}
	switch {
	case e.Type == "turn/end" && pl.Kind == turnmodel.KindTurn:
		st.turn, st.step = nil, nil
		st.gap = nil
	case e.Type == "step/start" && pl.Kind == turnmodel.KindStep && t != nil:
		st.step = &Step{Number: e.Step, Turn: t.Number, StartSeq: e.Seq, StartTime: e.Time,
			Anchor: st.s.anchor(fmt.Sprintf("step-%d.%d", t.Number, e.Step))}
		t.Steps = append(t.Steps, st.step)
		st.steps[e.Seq] = st.step
	case e.Type == "step/end" && pl.Kind == turnmodel.KindStep:
		st.step = nil
	}
	return t
}

// awaitRequest notes, at a step/start, the step whose history `derive
// --before-step` gives: named by the numbers the events carry, as Derive
// finds it (snapshot keeps it when its request begins).
func (st *state) awaitRequest(e *sessionlog.Event) {
	if e.Type != "step/start" || !e.HasTurn || !e.HasStep {
		return
	}
	st.pending, st.pendTurn, st.pendStep = st.step, e.Turn, e.Step
	if st.pending == nil || st.pending.StartSeq != e.Seq {
		st.pending = &Step{} // a step outside any turn: kept off the page
	}
}

// openTurn starts the page's turn at a turn/start the turn model opened.
func (b *builder) openTurn(st *state, e *sessionlog.Event, pl turnmodel.Place) *Turn {
	s := st.s
	t := &Turn{Number: e.Turn, StartSeq: e.Seq, StartTime: e.Time, End: e.Time, EndSeq: -1, Prompt: -1,
		Inherited: pl.Inherited, Anchor: s.anchor("turn-" + strconv.FormatInt(e.Turn, 10))}
	if pl.Spanned() {
		id := turnmodel.TraceIDOf(pl.Session, pl.Turn)
		t.TraceID = hex.EncodeToString(id[:])
	}
	if g := st.gap; g != nil && len(s.Turns) > 0 && s.Blocks[len(s.Blocks)-1] == g {
		// The rows between two turns (the next prompt queued, settings
		// changed) are shown with the turn they lead to.
		t.Rows = g.Rows
		s.Blocks = s.Blocks[:len(s.Blocks)-1]
	}
	st.turn, st.step, st.gap = t, nil, nil
	st.byNumber[t.Number] = t
	st.byStart[t.StartSeq] = t
	s.Turns = append(s.Turns, t)
	s.Blocks = append(s.Blocks, &Block{Turn: t})
	return t
}

// snapshot keeps the history a step's request saw: at the step's first
// model event (or its step/end, for a step without a model call), before
// that event is folded — the moment Derive stops for --before-step.
func (b *builder) snapshot(st *state, e *sessionlog.Event) {
	p := st.pending
	if p == nil || !e.HasTurn || !e.HasStep || e.Turn != st.pendTurn || e.Step != st.pendStep {
		return
	}
	switch e.Type {
	case "assistant/chunk", "assistant/attempt", "assistant/message", "step/end":
	default:
		return
	}
	st.pending = nil
	if p.Anchor == "" {
		return // not a step of the page
	}
	keep := 0
	if st.base != nil {
		keep = min(st.baseLen, st.keep)
	}
	n := len(st.hist)
	p.Context = &Context{Base: st.base, Carried: keep, Len: n, Messages: make([]Msg, 0, n-keep)}
	for _, m := range st.hist[keep:] {
		var msg Msg
		if pm := st.s.message(m.Seq()); pm != nil {
			msg = pm.Msg
		}
		p.Context.Messages = append(p.Context.Messages, msg)
	}
	p.Header, p.RequestSeq = st.header, e.Seq
	st.base, st.baseLen, st.keep = p, n, n
}

// fold hands the event to the deriver and keeps the mirror of its history
// in step: an append adds the message it projected (Deriver.Last), a
// replace takes the new history whole and notes how much of the old one
// it kept. It reports whether the event projected a message.
func (b *builder) fold(st *state, e *sessionlog.Event, f sessionlog.Format, row *Row) bool {
	if !sessionlog.IsSurfaceType(e.Type, f.RulesVersion()) {
		st.d.Event(e, f)
		return false
	}
	before, had := st.d.Last()
	st.d.Event(e, f)
	switch e.Surface.Kind {
	case sessionlog.SurfaceAppend:
		after, ok := st.d.Last()
		if ok && after.Seq() == e.Seq && (!had || after != before) {
			st.hist = append(st.hist, after)
			st.s.setMessage(b.msg(after), row)
			return true
		}
	case sessionlog.SurfaceReplace:
		h := st.d.History()
		old := st.hist
		st.hist = make([]sessionlog.Message, 0, h.Len())
		for _, m := range h.All() {
			st.hist = append(st.hist, m)
		}
		k := 0
		for k < len(old) && k < len(st.hist) && old[k] == st.hist[k] {
			k++
		}
		st.keep = min(st.keep, k)
		for _, m := range st.hist[k:] {
			if m.Seq() == e.Seq {
				st.s.setMessage(b.msg(m), row)
				return true
			}
		}
	}
	return false
}

// msg is a history message as the page keeps it: without its content when
// the page has none.
func (b *builder) msg(m sessionlog.Message) Msg {
	out := Msg{Seq: m.Seq(), Role: m.Role(), ToolCallID: m.ToolCallID(), IsError: m.IsError(), Provider: m.Provider(), Model: m.Model()}
	if !b.opts.NoContent {
		out.Content = m.Content()
	}
	return out
}

// drain takes the turns the engine closed onto the page.
func (b *builder) drain() {
	for _, et := range b.eng.Drain() {
		st := b.states[et.SessionID]
		if st == nil {
			continue
		}
		if et.Late != nil {
			if b.opts.NoContent {
				withoutContent(et)
			}
			if t := st.byNumber[et.Number]; t != nil {
				t.Late, t.LateReason, t.LateSeq = et.Late, et.Reason, et.EndSeq
			}
			continue
		}
		if b.opts.NoContent {
			withoutContent(et)
		}
		if t := st.byStart[et.StartSeq]; t != nil {
			b.closeTurn(st, t, et)
		}
	}
}

// withoutContent drops the texts the engine keeps of a turn: a hook's
// reason and failure messages (codes stay).
func withoutContent(t *turnengine.Turn) {
	t.Reason.HookReason = ""
	t.Reason.Failure = noMessage(t.Reason.Failure)
	for _, st := range t.Steps {
		for _, a := range st.Attempts {
			a.Failure = noMessage(a.Failure)
		}
	}
}

func noMessage(f *sessionlog.Failure) *sessionlog.Failure {
	if f == nil {
		return nil
	}
	c := *f
	c.Message = ""
	return &c
}

// closeTurn takes what the engine closed of a turn: its end, reason,
// tokens and costs, and each step's model calls and tool calls.
func (b *builder) closeTurn(st *state, t *Turn, et *turnengine.Turn) {
	t.engine = true
	t.EndSeq, t.End = et.EndSeq, et.LoggedEndTime
	t.Reason, t.DanglingCause = et.Reason, et.DanglingCause
	t.Usage, t.Cost, t.PricedCalls, t.UnpricedCalls, t.Clamped = et.Usage, et.Cost, et.PricedCalls, et.UnpricedCalls, et.Clamped
	if !t.Inherited {
		// An inherited turn's findings are its parent session's, as its
		// trace is: the collector and the CLI report them there.
		t.Findings = et.Findings
	}
	if et.Agent != "" {
		st.s.Agent = et.Agent
	}
	for _, es := range et.Steps {
		p := st.steps[es.StartSeq]
		if p == nil {
			continue
		}
		p.StartTime, p.EndTime, p.Open = es.StartTime, es.EndTime, es.Open
		for _, a := range es.Attempts {
			// The page keeps what the message cites as ranges; the engine's
			// list of every seq (a v0 message cites each chunk) goes.
			pa := &Attempt{Attempt: a, Sources: ranges(a.Sources)}
			a.Sources = nil
			p.Attempts = append(p.Attempts, pa)
			if a.Provider != "" || a.Model != "" {
				name := strings.Trim(a.Provider+"/"+a.Model, "/")
				if !st.models[name] {
					st.models[name] = true
					st.s.Models = append(st.s.Models, name)
				}
			}
		}
		for _, tc := range es.Tools {
			p.Calls = append(p.Calls, b.call(st, tc, p))
		}
		// Approvals go on their call.
		notes := p.Notes[:0]
		for _, n := range p.Notes {
			if c := findCall(p.Calls, n.CallID); c != nil {
				c.Notes = append(c.Notes, n)
				continue
			}
			notes = append(notes, n)
		}
		p.Notes = notes
	}
}

// call is a tool call of the page: the engine's, with its rows and
// content.
func (b *builder) call(st *state, tc *turnengine.ToolCall, step *Step) *Call {
	s := st.s
	c := &Call{ToolCall: tc, CallSeq: -1, ResultSeq: -1}
	id := tc.CallID
	switch {
	case tc.SubCallID != "":
		id = tc.SubCallID
		c.CallSeq = tc.StartSeq
		if seq, ok := st.settles[tc.SubCallID]; ok {
			c.ResultSeq = seq
		}
	case tc.NotStarted:
		c.ResultSeq = tc.StartSeq
	default:
		c.CallSeq = tc.StartSeq
		c.Arguments = st.args[tc.StartSeq]
		if seq, ok := st.resultOf[tc.StartSeq]; ok {
			c.ResultSeq = seq
		}
	}
	c.Anchor = s.anchor("call-" + id)
	if _, ok := s.callAt[id]; !ok {
		s.callAt[id] = c.Anchor
	}
	c.Error = st.errors[c.ResultSeq]
	for _, seq := range []int64{c.CallSeq, c.ResultSeq} {
		if r := s.rowOf.get(seq); r != nil && seq >= 0 {
			r.Call = c
		}
	}
	for _, ch := range st.children {
		if ch.callSeq == c.CallSeq && c.CallSeq >= 0 {
			c.Child = &Link{Session: ch.child}
		}
	}
	for _, sub := range tc.SubCalls {
		c.Subs = append(c.Subs, b.call(st, sub, step))
	}
	return c
}

func findCall(calls []*Call, id string) *Call {
	if id == "" {
		return nil
	}
	for _, c := range calls {
		if c.CallID == id && c.SubCallID == "" {
			return c
		}
	}
	return nil
}

// track keeps what the page shows of an event beyond the engine's view:
// tool arguments, result pairing, error details, request headers, notes.
func (b *builder) track(st *state, e *sessionlog.Event, pl turnmodel.Place, t *Turn, row *Row) {
	content := !b.opts.NoContent
	switch e.Type {
	case "tool/call":
		if content {
			st.args[e.Seq] = strings.Clone(e.Arguments)
		}
		if pl.Kind == turnmodel.KindTool {
			st.inFlight = append(st.inFlight, e.Seq)
			st.tools[e.Seq] = strings.Clone(e.ToolName)
		}
		return
	case "tool/result":
		if pl.Paired {
			st.resultOf[pl.CallSeq] = e.Seq
			st.inFlight = slices.DeleteFunc(st.inFlight, func(s int64) bool { return s == pl.CallSeq })
			delete(st.tools, pl.CallSeq)
		}
		if content && e.HasErrorDetail {
			st.errors[e.Seq] = errorDetail(e)
		}
		if e.Surface.Kind != sessionlog.SurfaceReplace {
			return
		}
	case "tool/ptc-dispatch", "tool/code-dispatch":
		st.settles[strings.Clone(e.SubCallID)] = e.Seq
		return
	case "user/message":
		if t != nil && t.Prompt < 0 && row.Message == e.Seq {
			t.Prompt = e.Seq
		}
		return
	case "turn/start", "turn/end", "step/start", "step/end", "assistant/chunk", "assistant/attempt", "assistant/message",
		"tool/ptc-dispatch-start", "tool/code-dispatch-start", "system/message", "developer/message":
		return
	}
	n := b.note(st, e)
	if n == nil || t == nil {
		return
	}
	if st.step != nil && pl.Kind >= turnmodel.KindStep && pl.Step == st.step.Number && st.turn == t {
		st.step.Notes = append(st.step.Notes, n)
		return
	}
	t.Notes = append(t.Notes, n)
}

// subagentStarted links a JSON-RPC subagent.started notification's child
// session to the parent's call in flight (the latest one of a tool whose
// name says agent, else the latest).
func (b *builder) subagentStarted(r *sessionlog.Row) {
	var n struct {
		Params struct {
			Parent string `json:"parentSessionId"`
			Child  string `json:"childSessionId"`
		} `json:"params"`
	}
	if !decodeJSON(r.Bytes, &n) || n.Params.Parent == "" || n.Params.Child == "" {
		return
	}
	parent := b.state(n.Params.Parent)
	child := b.state(n.Params.Child)
	pc := pendingChild{child: n.Params.Child, callSeq: -1}
	for _, seq := range slices.Backward(parent.inFlight) {
		if pc.callSeq < 0 {
			pc.callSeq = seq
		}
		if strings.Contains(strings.ToLower(parent.tools[seq]), "agent") {
			pc.callSeq = seq
			break
		}
	}
	parent.children = append(parent.children, pc)
	child.s.Parent = &Link{Session: n.Params.Parent}
}

// finish settles what needs the whole input: where each message is shown
// in full, the sessions' totals and their links to one another.
func (b *builder) finish() {
	if len(b.early) > 0 { // no row named a session
		b.state(b.fallback())
	}
	for _, st := range b.order {
		s := st.s
		slices.Sort(s.citers)
		if h := s.Header; h != nil {
			if h.AgentPreset != "" {
				s.Agent = h.AgentPreset
			}
			if s.Parent == nil && h.ParentSession != "" {
				s.Parent = &Link{Session: h.ParentSession}
			}
		}
		for _, t := range s.Turns {
			b.homeTurn(s, t)
			s.Totals.add(t)
		}
		for _, ch := range st.children {
			l := Link{Session: ch.child}
			if r := s.rowOf.get(ch.callSeq); r != nil && ch.callSeq >= 0 && r.Call != nil {
				l.Call = r.Call.Anchor
			}
			s.Children = append(s.Children, l)
			if c := b.states[ch.child]; c != nil && c.s.Parent != nil {
				c.s.Parent.Call = l.Call
			}
		}
	}
}

// homeTurn decides where the turn's messages are shown in full: the
// prompt at the top of the turn; each other message the first time a
// step's context holds it; each answer in its step; each tool result in
// its call. Everywhere else a message is a reference to its home.
func (b *builder) homeTurn(s *Session, t *Turn) {
	home := func(seq int64) bool {
		m := s.message(seq)
		if m == nil || m.home {
			return false
		}
		m.home = true // each message has one home
		t.Homes = append(t.Homes, seq)
		return true
	}
	if t.Prompt >= 0 {
		home(t.Prompt)
	}
	for _, st := range t.Steps {
		if c := st.Context; c != nil {
			c.Home = make([]bool, len(c.Messages))
			for i, m := range c.Messages {
				c.Home[i] = home(m.Seq)
			}
		}
		for _, a := range st.Attempts {
			if a.Committed && a.MessageSeq >= 0 {
				home(a.MessageSeq)
			}
		}
		var calls func([]*Call)
		calls = func(cs []*Call) {
			for _, c := range cs {
				if c.ResultSeq >= 0 && c.SubCallID == "" {
					home(c.ResultSeq)
				}
				calls(c.Subs)
			}
		}
		calls(st.Calls)
	}
	for _, n := range t.Notes {
		if n.Message >= 0 {
			home(n.Message)
		}
	}
}

// add counts a turn in the totals.
func (tt *Totals) add(t *Turn) {
	if tt.Reasons == nil {
		tt.Reasons = map[string]int{}
	}
	tt.Turns++
	tt.Steps += len(t.Steps)
	for _, st := range t.Steps {
		tt.ModelCalls += len(st.Attempts)
		tt.ToolCalls += len(st.Calls)
	}
	u := t.Usage
	if u.Reported {
		tt.Tokens.Reported = true
		tt.Tokens.Input += u.Input
		tt.Tokens.Output += u.Output
		tt.Tokens.CacheRead += u.CacheRead
		tt.Tokens.CacheWrite += u.CacheWrite
		tt.Tokens.Reasoning += u.Reasoning
	}
	tt.Cost = tt.Cost.Add(t.Cost)
	tt.PricedCalls += t.PricedCalls
	tt.UnpricedCalls += t.UnpricedCalls
	reason := t.Reason.Kind
	if reason == "" {
		reason = "unknown"
	}
	tt.Reasons[reason]++
	tt.LastReason = reason
	for _, f := range t.Findings {
		if tt.Findings == nil {
			tt.Findings = map[string]int{}
		}
		tt.Findings[f.Name]++
	}
}
