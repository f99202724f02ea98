package turnengine

import (
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/sessiontable"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Config bounds and shapes the engine. Zero values take the defaults.
type Config struct {
	// AgentName names the agent in turn spans when the session header has
	// no agentPreset.
	AgentName string
	// DanglingTimeout: silence (arrival time) after which an open turn is
	// closed as dangling, cause "timeout".
	DanglingTimeout time.Duration
	// MaxOpenTurns bounds open turns; at the bound the oldest is closed as
	// dangling, cause "evicted".
	MaxOpenTurns int
	// MaxSessions bounds session bookkeeping; the least recently active
	// session is forgotten (its open turn closed, cause "evicted").
	MaxSessions int
	// ReorderWindow bounds the events held per session while a missing seq
	// is awaited; GapTimeout bounds how long it is awaited.
	ReorderWindow int
	GapTimeout    time.Duration
	// CaptureContent puts prompts, outputs and tool payloads on spans,
	// truncated to MaxContentBytes.
	CaptureContent  bool
	MaxContentBytes int
	// LiveSteps emits each step's spans (the step, its model calls and
	// tool calls) as soon as the step ends, and the turn's root at its end:
	// a long turn is visible while it runs, and the engine does not hold
	// its finished steps. Off, a turn's spans go out together at its end.
	LiveSteps bool
	// Observer is told what the engine sees (events, violations, closed
	// turns, live step fragments, late closes); nil: no one. The metrics
	// are an observer (turnrender.Metrics).
	Observer Observer
	// Prices prices the model calls of every turn (Attempt.Cost,
	// Turn.Cost); nil: the built-in DeepSeek prices. An empty table prices
	// nothing.
	Prices *pricing.Table
	// KeepInherited rebuilds a fork's inherited prefix (the events before
	// the header's seedLength, docs/format.md §11.5) into turns like the session's own, as
	// an outline of the whole log wants. Off, they are skipped: their spans
	// are the parent session's.
	KeepInherited bool
	// Findings are the thresholds of the findings rules (internal/findings);
	// zero: findings.Defaults.
	Findings findings.Config
}

// Defaults. The session bounds (DanglingTimeout, MaxOpenTurns,
// MaxSessions) default to turnmodel's, the ones every part that places
// events shares.
const (
	DefaultAgentName       = "dsh"
	DefaultReorderWindow   = 4096
	DefaultGapTimeout      = 5 * time.Second
	DefaultMaxContentBytes = 16384
)

func (c Config) withDefaults() Config {
	if c.AgentName == "" {
		c.AgentName = DefaultAgentName
	}
	b := c.Bounds().WithDefaults()
	c.DanglingTimeout, c.MaxOpenTurns, c.MaxSessions = b.DanglingTimeout, b.MaxOpenTurns, b.MaxSessions
	if c.ReorderWindow <= 0 {
		c.ReorderWindow = DefaultReorderWindow
	}
	if c.GapTimeout <= 0 {
		c.GapTimeout = DefaultGapTimeout
	}
	if c.MaxContentBytes <= 0 {
		c.MaxContentBytes = DefaultMaxContentBytes
	}
	if c.Prices == nil {
		c.Prices = defaultPrices
	}
	return c
}

// Bounds are the configuration's session bounds.
func (c Config) Bounds() turnmodel.Bounds {
	return turnmodel.Bounds{MaxSessions: c.MaxSessions, MaxOpenTurns: c.MaxOpenTurns, DanglingTimeout: c.DanglingTimeout}
}

// Dangling causes.
const (
	CauseTimeout    = "timeout"
	CauseEvicted    = "evicted"
	CauseShutdown   = "shutdown"
	CauseEndOfInput = "end_of_input"
	// CauseSuperseded: a new turn/start arrived while the turn was open.
	CauseSuperseded = "superseded"
)

// Stats are the engine's running counts, for self-telemetry.
type Stats struct {
	Events       int64 // events applied, each once
	Duplicates   int64 // events dropped as already seen
	Late         int64 // events for a turn already closed
	Orphans      int64 // model/tool events outside any open turn or step
	GapsSkipped  int64 // missing seqs given up on
	Overflows    int64 // reorder windows that overflowed
	TurnsClosed  int64
	ClosedLate   int64            // late closes: turn/ends of turns closed as dangling
	Dangling     map[string]int64 // by cause
	Violations   int64
	SessionsSeen int64
}

// Input is one event handed to the engine.
type Input struct {
	SessionID string
	Event     *sessionlog.Event
	Format    sessionlog.Format
	// Header is the session's header when known (agent preset, seed cut).
	Header *sessionlog.Header
	// Gappy marks a source whose seqs have gaps by design (dsh's v0 OTLP
	// export keeps one chunk per step): gaps are not awaited.
	Gappy bool
}

// Engine holds the open state of every session. It is not safe for
// concurrent use; the caller serializes calls.
type Engine struct {
	cfg Config
	// sessions are the sessions tracked, in order of last arrival.
	sessions *sessiontable.Table[*session]
	last     *session // the session session returned last (a batch is mostly one session's)
	// open orders the sessions that have an open turn by when it opened.
	open      sessiontable.List[*session]
	gaps      map[*session]struct{}
	closed    []*Turn
	forgotten []string
	names     map[string]string   // see name
	tombs     map[string]*dangled // the dangling turns of evicted sessions
	stats     Stats
	obs       Observer
}

// Observer is told, in order and with the arrival time, what the engine
// sees: each event applied (once; not those re-applied after a Resume),
// each invariant violation, and each turn it closes — a whole turn, a live
// step fragment (Turn.Fragment) or a late close (Turn.Late), priced —
// before Drain hands it out. The observer reads what it is told and
// changes none of it; the engine keeps no aggregate of its own beyond
// Stats. The metrics aggregator (turnrender.Metrics) is one.
type Observer interface {
	Event(eventType string, now time.Time)
	Violation(code string, now time.Time)
	Closed(t *Turn, now time.Time)
}

// nobody is the observer of an engine given none.
type nobody struct{}

func (nobody) Event(string, time.Time)     {}
func (nobody) Violation(string, time.Time) {}
func (nobody) Closed(*Turn, time.Time)     {}

// New returns an empty engine.
func New(cfg Config) *Engine {
	cfg = cfg.withDefaults()
	obs := cfg.Observer
	if obs == nil {
		obs = nobody{}
	}
	return &Engine{
		obs:      obs,
		cfg:      cfg,
		sessions: sessiontable.New[*session](cfg.MaxSessions),
		gaps:     map[*session]struct{}{},
		names:    map[string]string{},
		tombs:    map[string]*dangled{},
		stats:    Stats{Dangling: map[string]int64{}},
	}
}

// Config is the engine's configuration with defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// Stats returns a copy of the running counts.
func (e *Engine) Stats() Stats {
	s := e.stats
	s.Dangling = make(map[string]int64, len(e.stats.Dangling))
	for k, v := range e.stats.Dangling {
		s.Dangling[k] = v
	}
	return s
}

// OpenTurns is the number of turns open now; Sessions the sessions tracked.
func (e *Engine) OpenTurns() int { return e.open.Len() }

// Sessions is the number of sessions the engine tracks.
func (e *Engine) Sessions() int { return e.sessions.Len() }

// RecordViolation counts a violation the caller found outside the engine —
// a problem decoding a row — in Stats.Violations and tells the observer,
// beside those the engine's own validation finds.
func (e *Engine) RecordViolation(code string, now time.Time) {
	e.stats.Violations++
	e.obs.Violation(code, now)
}

// Drain returns the turns closed since the last Drain, in closing order.
func (e *Engine) Drain() []*Turn {
	out := e.closed
	e.closed = nil
	return out
}

// Ingest hands one event to the engine at arrival time now. Events of a
// session are applied in seq order: an early event waits (bounded) for the
// missing ones, a repeated seq is dropped.
func (e *Engine) Ingest(in Input, now time.Time) {
	s := e.session(in.SessionID, now)
	if in.Header != nil {
		s.header = in.Header
		if h := in.Header; h.HasSeedLength {
			s.cur.SetFork(clientid.Sibling(in.SessionID, h.ParentSession), h.SeedLength)
		}
	}
	s.format = in.Format
	s.gappy = s.gappy || in.Gappy
	ev := in.Event
	if !s.started && (ev.Seq == 0 || in.Gappy) {
		s.started, s.next = true, ev.Seq
	}
	// Otherwise a stream that joined late, or whose first events are still
	// on the way, is held (below) until its gap times out.
	switch {
	case s.started && ev.Seq < s.next:
		e.stats.Duplicates++
		return
	case s.buf[ev.Seq] != nil:
		e.stats.Duplicates++
		return
	case s.started && ev.Seq == s.next:
		e.apply(s, ev, now)
		s.next = ev.Seq + 1
		e.drainBuffer(s, now)
	case s.started && in.Gappy:
		e.apply(s, ev, now)
		s.next = ev.Seq + 1
	default:
		s.buf[ev.Seq] = ev.Own() // held past its batch: a copy of its own
		e.markGap(s, now)
		if len(s.buf) > e.cfg.ReorderWindow {
			e.stats.Overflows++
			e.skipGap(s, now)
		}
	}
}

func (e *Engine) markGap(s *session, now time.Time) {
	if s.gapSince.IsZero() {
		s.gapSince = now
	}
	e.gaps[s] = struct{}{}
}

// skipGap gives up on the missing seqs: processing resumes at the lowest
// buffered seq.
func (e *Engine) skipGap(s *session, now time.Time) {
	if len(s.buf) == 0 {
		return
	}
	if s.started {
		e.stats.GapsSkipped++
	}
	s.started = true
	s.next = s.minBuffered()
	e.drainBuffer(s, now)
}

func (e *Engine) drainBuffer(s *session, now time.Time) {
	for {
		ev := s.buf[s.next]
		if ev == nil {
			break
		}
		delete(s.buf, s.next)
		e.apply(s, ev, now)
		s.next++
	}
	if len(s.buf) == 0 {
		s.gapSince = time.Time{}
		delete(e.gaps, s)
	} else if s.gapSince.IsZero() {
		// A further gap: it gets its own wait.
		e.markGap(s, now)
	}
}

// Sweep closes what has waited long enough at arrival time now: gaps older
// than GapTimeout are skipped, turns silent for DanglingTimeout are closed
// as dangling.
func (e *Engine) Sweep(now time.Time) {
	e.SweepHolding(now, nil)
}

// Due returns the sessions whose open turn Sweep(now) would close as
// dangling, oldest first.
func (e *Engine) Due(now time.Time) []string {
	var out []string
	e.sessions.Ascending(func(_ string, s *session) bool {
		if now.Sub(s.lastArrival) < e.cfg.DanglingTimeout {
			return false
		}
		if s.turn != nil {
			out = append(out, s.id)
		}
		return true
	})
	return out
}

// SweepHolding is Sweep, except that the turns of the sessions hold
// reports true for stay open (nil holds none): a later sweep closes them.
func (e *Engine) SweepHolding(now time.Time, hold func(session string) bool) {
	for s := range e.gaps {
		if now.Sub(s.gapSince) >= e.cfg.GapTimeout {
			s.gapSince = time.Time{}
			delete(e.gaps, s)
			e.skipGap(s, now) // re-marks the session if a further gap remains
		}
	}
	e.sessions.Ascending(func(_ string, s *session) bool {
		if now.Sub(s.lastArrival) < e.cfg.DanglingTimeout {
			return false // the table is ordered by arrival
		}
		if s.turn != nil && (hold == nil || !hold(s.id)) {
			e.closeDangling(s, CauseTimeout, now)
		}
		return true
	})
}

// Flush applies every buffered event (skipping gaps) and closes every open
// turn as dangling with cause; used at shutdown and at the end of a file.
func (e *Engine) Flush(cause string, now time.Time) {
	for s := range e.gaps {
		for len(s.buf) > 0 {
			s.gapSince = time.Time{}
			e.skipGap(s, now)
		}
		delete(e.gaps, s)
	}
	for el := e.open.Front(); el != nil; {
		s := el.Value
		el = el.Next()
		e.closeDangling(s, cause, now)
	}
}

func (e *Engine) session(id string, now time.Time) *session {
	if s := e.last; s != nil && s.id == id {
		e.sessions.Touch(s.elem)
		s.lastArrival = now
		return s
	}
	s, ok := e.sessions.Get(id)
	if !ok {
		if e.sessions.Full() {
			e.evictSession(now)
		}
		s = newSession(id, e)
		if d := e.tombs[s.id]; d != nil {
			delete(e.tombs, s.id)
			s.dangled = d
			s.cur.SetLastClosed(d.number)
			// It carries on where it was forgotten.
			s.started, s.next = true, d.next
			s.validator.Resume(d.next, d.number)
		}
		s.elem = e.sessions.Add(s.id, s) // the session's own copy of the id, no view into a row
		e.stats.SessionsSeen++
	}
	s.lastArrival = now
	e.last = s
	return s
}

// forget drops session s from the sessions table (and the last-used cache).
func (e *Engine) forget(s *session) {
	e.sessions.Remove(s.id)
	if e.last == s {
		e.last = nil
	}
}

func (e *Engine) evictSession(now time.Time) {
	_, s, ok := e.sessions.Oldest()
	if !ok {
		return
	}
	if s.turn != nil {
		e.closeDangling(s, CauseEvicted, now)
	}
	delete(e.gaps, s)
	e.forget(s)
	e.forgotten = append(e.forgotten, s.id)
	if s.dangled != nil {
		// Its repair may still come: a later event starts the session
		// afresh, and finds its dangling turn here.
		if len(e.tombs) >= maxTombstones {
			clear(e.tombs)
		}
		s.dangled.next = s.next
		e.tombs[s.id] = s.dangled
	}
}

func (e *Engine) closeDangling(s *session, cause string, now time.Time) {
	if s.turn == nil {
		return
	}
	e.stats.Dangling[cause]++
	t := s.turn.t
	s.closeTurn(sessionlog.Reason{Kind: "dangling"}, cause, s.turn.lastTime, -1, now)
	s.cur.CloseTurn() // its later events are late
	s.rememberDangling(t, now)
}

// turnOpened tracks a newly opened turn and enforces MaxOpenTurns.
func (e *Engine) turnOpened(s *session, now time.Time) {
	for e.open.Len() >= e.cfg.MaxOpenTurns {
		oldest := e.open.Front().Value
		e.closeDangling(oldest, CauseEvicted, now)
	}
	s.openElem = e.open.PushBack(s)
}

// turnClosed records a closed turn.
func (e *Engine) turnClosed(s *session, t *Turn, now time.Time) {
	if s.openElem != nil {
		e.open.Remove(s.openElem)
		s.openElem = nil
	}
	if t.Late == nil {
		e.stats.TurnsClosed++
		e.price(t, t.Steps...)
		e.find(t)
	}
	e.obs.Closed(t, now)
	e.closed = append(e.closed, t)
}

// find closes a turn's evidence into its findings.
func (e *Engine) find(t *Turn) {
	if t.evidence == nil {
		return
	}
	t.Findings = t.evidence.Close(e.cfg.Findings, t.Totals())
	t.evidence = nil
}

// Totals are a closed turn's totals as the budgets measure them: steps,
// tokens (input, output, cache reads and writes, reasoning), cost and
// duration. The findings' budgets and the sampling's keep_over read them.
func (t *Turn) Totals() findings.Totals {
	u := t.Usage
	return findings.Totals{
		Ended: !t.Dangling(), EndSeq: t.EndSeq, StartSeq: t.StartSeq, Steps: t.NumSteps(),
		Tokens:   u.Input + u.Output + u.CacheRead + u.CacheWrite + u.Reasoning,
		Cost:     t.Cost.Total(),
		Duration: time.Duration(t.EndTime-t.StartTime) * time.Millisecond,
	}
}

// maxNames bounds the engine's table of names (interned below).
const maxNames = 4096

// name returns v as a string of the engine's own: tool, model and provider
// names, finish kinds and error codes repeat across events, so each is
// copied out of its row once and shared afterwards (an event's strings are
// views into its row, which a kept view would hold in memory). Past
// maxNames distinct names, further ones are copied each time.
func (e *Engine) name(v string) string {
	if v == "" {
		return ""
	}
	if n, ok := e.names[v]; ok {
		return n
	}
	n := strings.Clone(v)
	if len(e.names) < maxNames {
		e.names[n] = n
	}
	return n
}
