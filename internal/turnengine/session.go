package turnengine

import (
	"slices"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/sessiontable"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// session is the open state of one session: the ordering state, the open
// turn, and the little the log carries across turns (the model in use).
type session struct {
	e      *Engine
	id     string
	header *sessionlog.Header
	format sessionlog.Format

	started     bool
	next        int64
	buf         map[int64]*sessionlog.Event
	gapSince    time.Time
	lastArrival time.Time

	// elem is the session's place in the engine's table; openElem its
	// place in the open-turn order while it has an open turn.
	elem     *sessiontable.Elem[*session]
	openElem *sessiontable.Elem[*session]

	turn *openTurn
	// dangled is the latest turn closed as dangling, until dsh closes it
	// (late.go).
	dangled *dangled
	// applied: an event was applied; firstSeq is the first one's seq.
	applied  bool
	firstSeq int64
	// cur says where each event belongs (the turn model); the engine's
	// open turn follows it.
	cur *turnmodel.Cursor

	// provider and model of the latest request/header or request/context:
	// the identity of attempts without a message of their own.
	provider, model string

	// restored: the events up to seq restoredTo are re-applied after a
	// restart (Resume) and count nowhere a second time.
	restored   bool
	restoredTo int64
	// lastTurnStart is the seq of the latest turn/start applied, inherited
	// ones included (Mark).
	lastTurnStart int64

	validator *sessionlog.Validator
	deriver   *sessionlog.Deriver
	gappy     bool
}

// openTurn is a turn being built.
type openTurn struct {
	t        *Turn
	step     *Step
	lastTime int64
	// retryStart is the time of an llm/retry-started awaiting its attempt.
	retryStart    int64
	hasRetryStart bool
	// subs are open dispatch sub-calls by subCallId.
	subs map[string]*ToolCall
	// stepsEmitted counts the turn's steps already emitted (live steps).
	stepsEmitted int
	// callsBySeq maps the open step's tool/call seqs to their calls: the
	// turn model names the call a result closes by its seq.
	callsBySeq map[int64]*ToolCall
}

func newSession(id string, e *Engine) *session {
	s := &session{e: e, id: strings.Clone(id), buf: map[int64]*sessionlog.Event{}}
	s.cur = turnmodel.NewCursor(s.id)
	s.validator = sessionlog.NewValidator()
	s.validator.TrackSurface(false)
	if e.cfg.CaptureContent {
		s.deriver = sessionlog.NewDeriver()
	}
	return s
}

func (s *session) minBuffered() int64 {
	first := true
	var m int64
	for k := range s.buf {
		if first || k < m {
			m, first = k, false
		}
	}
	return m
}

func (s *session) agent() string {
	if s.header != nil && s.header.AgentPreset != "" {
		return s.header.AgentPreset
	}
	return s.e.cfg.AgentName
}

// apply folds one event, in seq order, into the session's state.
func (e *Engine) apply(s *session, ev *sessionlog.Event, now time.Time) {
	restoring := s.restored && ev.Seq <= s.restoredTo
	if !restoring {
		e.count(s, ev, now)
	} else if !s.gappy {
		s.validator.Event(ev, s.format) // its state follows; its findings were counted before
	}
	if ev.Type == "turn/start" {
		s.lastTurnStart = ev.Seq
	}
	// Where the event belongs is the turn model's answer; the engine builds
	// the spans there.
	m := ev.TurnModel(s.format)
	pl := s.cur.Advance(&m)
	if pl.Inherited && !e.cfg.KeepInherited {
		// Inherited from the parent session, whose spans these are (docs/format.md §11.5).
		return
	}
	s.build(ev, pl, now, restoring)
	if s.deriver != nil {
		// Folded after the event's own handling, so an attempt's input is
		// the history before its step's first model event.
		s.deriver.Event(ev, s.format)
	}
}

// count counts an event applied for the first time, and the invariant
// violations the session's validator finds in it.
func (e *Engine) count(s *session, ev *sessionlog.Event, now time.Time) {
	e.stats.Events++
	e.obs.Event(ev.Type, now)
	if s.gappy {
		// A gappy feed (dsh's v0 OTLP export) has neither dense seqs nor
		// surface keys: there is nothing to validate it against.
		return
	}
	for _, v := range s.validator.Event(ev, s.format) {
		e.stats.Violations++
		e.obs.Violation(v.Code, now)
	}
}

// build applies an event the turn model placed (pl) to the session's open
// turn: a stray event is counted, a boundary opens or closes a turn or
// step, the rest fill in the model calls, tool calls and span events.
func (s *session) build(ev *sessionlog.Event, pl turnmodel.Place, now time.Time, restoring bool) {
	e := s.e
	if !s.applied {
		s.applied, s.firstSeq = true, ev.Seq
	}
	switch pl.Stray {
	case turnmodel.Late:
		if !s.late(ev, now, restoring) && !restoring {
			e.stats.Late++
		}
		return
	case turnmodel.Orphan:
		if !s.orphanEnd(ev, now) && !restoring {
			e.stats.Orphans++
		}
		return
	}
	ot := s.turn
	if ot != nil {
		ot.lastTime = max(ot.lastTime, ev.Time)
	}
	if ot == nil && ev.Type != "turn/start" {
		// Between turns (or a turn the engine skipped: a fork's inherited
		// prefix): nothing to build on.
		return
	}
	switch ev.Type {
	case "turn/start", "turn/end", "step/start", "step/end":
		s.boundary(ot, ev, now, restoring)
	case "request/header", "request/context":
		s.requestIdentity(ev)
	case "assistant/chunk", "assistant/attempt", "assistant/message":
		if st := ot.step; st != nil {
			s.modelEvent(st, ev, pl)
		}
	case "tool/call", "tool/result":
		s.toolEvent(ot, ev, pl)
	case "tool/ptc-dispatch-start", "tool/code-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch":
		s.dispatchEvent(ot, ev)
	default:
		ot.spanEvent(ev, pl)
	}
}

// boundary opens or closes the session's turn or its step.
func (s *session) boundary(ot *openTurn, ev *sessionlog.Event, now time.Time, restoring bool) {
	switch ev.Type {
	case "turn/start":
		if ot != nil {
			s.e.stats.Dangling[CauseSuperseded]++
			s.closeTurn(sessionlog.Reason{Kind: "dangling"}, CauseSuperseded, ot.lastTime, -1, now)
			s.rememberDangling(ot.t, now)
		}
		s.turnStart(ev, now)
	case "turn/end":
		s.closeTurn(ownReason(ev.Reason), "", ev.Time, ev.Seq, now)
	case "step/start":
		if ot.step != nil {
			ot.closeStep(ev.Time, true)
			s.finishStep(restoring, now)
		}
		ot.step = &Step{Number: ev.Step, StartTime: ev.Time, StartSeq: ev.Seq}
		ot.t.Steps = append(ot.t.Steps, ot.step)
		clear(ot.callsBySeq)
	case "step/end":
		if ot.step != nil {
			ot.closeStep(ev.Time, false)
			s.finishStep(restoring, now)
		}
	}
}

// requestIdentity keeps the provider and model a request names: the
// identity of attempts without a message of their own.
func (s *session) requestIdentity(ev *sessionlog.Event) {
	if ev.Provider != "" {
		s.provider = s.e.name(ev.Provider)
	}
	if ev.Model != "" {
		s.model = s.e.name(ev.Model)
	}
}

// modelEvent fills in the model attempt an assistant event belongs to.
func (s *session) modelEvent(st *Step, ev *sessionlog.Event, pl turnmodel.Place) {
	switch ev.Type {
	case "assistant/chunk":
		s.chunk(s.attemptAt(st, ev, pl), ev)
	case "assistant/attempt":
		a := s.attemptAt(st, ev, pl)
		s.fromStream(a, ev.Stream)
		a.EndTime = ev.Time
		a.closed = true
	case "assistant/message":
		s.message(st, s.attemptAt(st, ev, pl), pl.NewAttempt, ev)
	}
}

// toolEvent opens a tool call at its tool/call and closes it at its
// tool/result; a result rewritten in place is a span event of the turn.
func (s *session) toolEvent(ot *openTurn, ev *sessionlog.Event, pl turnmodel.Place) {
	e := s.e
	if ev.Type == "tool/result" && ev.Surface.Kind == sessionlog.SurfaceReplace {
		ot.addEvent(ev, "dsh.tool.result_rewritten", Attr{semconv.GenAIToolCallID, ev.CallID})
		return
	}
	st := ot.step
	if st == nil {
		return
	}
	if ev.Type == "tool/result" {
		s.toolResult(st, ev, pl)
		return
	}
	tc := &ToolCall{CallID: strings.Clone(ev.CallID), Name: e.name(ev.ToolName), StartTime: ev.Time, StartSeq: ev.Seq,
		LoggedStartTime: ev.Time, Outcome: "unknown"}
	if evid := ot.t.evidence; evid != nil {
		evid.Call(ev.Seq, ev.CallID, ev.ToolName, ev.Arguments)
	}
	if e.cfg.CaptureContent {
		tc.Arguments = strings.Clone(truncateArguments(ev.Arguments, e.cfg.MaxContentBytes))
	}
	st.Tools = append(st.Tools, tc)
	ot.callsBySeq[ev.Seq] = tc
}

// dispatchEvent opens a nested dispatch under its tool call at its start,
// and closes it when it settles. One whose call or start is unknown is an
// orphan.
func (s *session) dispatchEvent(ot *openTurn, ev *sessionlog.Event) {
	e := s.e
	switch ev.Type {
	case "tool/ptc-dispatch-start", "tool/code-dispatch-start":
		parent := ot.findCall(ev.CallID)
		if parent == nil {
			e.stats.Orphans++
			return
		}
		sub := &ToolCall{CallID: strings.Clone(ev.CallID), SubCallID: strings.Clone(ev.SubCallID), Name: e.name(ev.ToolName),
			StartTime: ev.Time, StartSeq: ev.Seq, LoggedStartTime: ev.Time, Outcome: "unknown"}
		parent.SubCalls = append(parent.SubCalls, sub)
		ot.subs[sub.SubCallID] = sub
	default:
		sub := ot.subs[ev.SubCallID]
		if sub == nil {
			e.stats.Orphans++
			return
		}
		delete(ot.subs, ev.SubCallID)
		sub.EndTime, sub.LoggedEndTime, sub.done = ev.Time, ev.Time, true
		sub.Outcome, sub.ErrorCode = outcome(ev.IsError), e.name(ev.ErrorCode)
	}
}

// spanEvent records the events that are span events of the turn, its step
// or a tool call (docs/design.md §4.3); other types add nothing.
func (ot *openTurn) spanEvent(ev *sessionlog.Event, pl turnmodel.Place) {
	switch ev.Type {
	case "llm/retry-started":
		if evid := ot.t.evidence; evid != nil {
			evid.Retry(ev.Seq)
		}
		ot.retryStart, ot.hasRetryStart = ev.Time, true
		ot.addEvent(ev, "dsh.llm.retry_started", Attr{semconv.DshRetry, ev.Retry})
	case "llm/retry":
		attrs := []Attr{{semconv.DshRetry, ev.Retry}}
		if ev.Failure != nil {
			attrs = append(attrs, Attr{semconv.ErrorType, ev.Failure.Code})
		}
		ot.addEvent(ev, "dsh.llm.retry", attrs...)
	case "user/message":
		ot.addEvent(ev, "dsh.user.message", Attr{semconv.DshMessageSource, ev.SourceKind})
	case "approval/asked":
		if pl.Kind == turnmodel.KindTool {
			ot.addEventOnCall(ev, "dsh.approval.asked", ev.CallID, Attr{semconv.GenAIToolName, ev.ToolName})
		} else {
			ot.addEvent(ev, "dsh.approval.asked", Attr{semconv.GenAIToolName, ev.ToolName})
		}
	case "compaction/start", "compaction/summary", "compaction/prune", "compaction/end",
		"approval/decided", "hook/invoked", "hook/result", "session/end-seed":
		ot.addEvent(ev, "dsh."+strings.ReplaceAll(ev.Type, "/", "."))
	}
}

func (s *session) turnStart(ev *sessionlog.Event, now time.Time) {
	t := &Turn{
		SessionID: s.id, Number: ev.Turn, Agent: s.agent(),
		Nested:    s.header != nil && s.header.DelegationDepth >= 1,
		StartTime: ev.Time, StartSeq: ev.Seq, EndSeq: -1,
	}
	t.evidence = findings.NewTurn()
	s.turn = &openTurn{t: t, lastTime: ev.Time, subs: map[string]*ToolCall{}, callsBySeq: map[int64]*ToolCall{}}
	s.e.turnOpened(s, now)
}

// attemptAt is the step's attempt the turn model placed ev in, started
// here when ev starts it.
func (s *session) attemptAt(st *Step, ev *sessionlog.Event, pl turnmodel.Place) *Attempt {
	if !pl.NewAttempt && pl.Attempt >= 1 && pl.Attempt <= len(st.Attempts) {
		return st.Attempts[pl.Attempt-1]
	}
	return s.newAttempt(st, ev)
}

// closeTurn finishes the open turn: it closes what is still open, clamps
// times into their parents and hands the turn to the engine.
func (s *session) closeTurn(reason sessionlog.Reason, cause string, end, endSeq int64, now time.Time) {
	ot := s.turn
	t := ot.t
	if ot.step != nil {
		ot.closeStep(end, true)
	}
	t.Reason = reason
	t.DanglingCause = cause
	t.EndTime, t.EndSeq, t.LoggedEndTime = end, endSeq, end
	if t.EndTime < t.StartTime {
		t.EndTime, t.Clamped = t.StartTime, true
	}
	for _, st := range t.Steps {
		clampStep(st, t.StartTime, t.EndTime)
		addUsage(&t.Usage, st)
	}
	t.StepCount = ot.stepsEmitted + len(t.Steps)
	s.turn = nil
	s.e.turnClosed(s, t, now)
}

// clampStep keeps a step inside [ps, pe], its attempts and tool calls
// inside it.
func clampStep(st *Step, ps, pe int64) {
	st.StartTime, st.EndTime = clampInto(st.StartTime, st.EndTime, ps, pe, &st.Clamped)
	for _, a := range st.Attempts {
		a.StartTime, a.EndTime = clampInto(a.StartTime, a.EndTime, st.StartTime, st.EndTime, &a.Clamped)
		if a.HasFirstChunk && (a.FirstChunkTime < a.StartTime || a.FirstChunkTime > a.EndTime) {
			a.FirstChunkTime = min(max(a.FirstChunkTime, a.StartTime), a.EndTime)
			a.Clamped = true
		}
	}
	for _, tc := range st.Tools {
		clampCall(tc, st)
	}
}

// addUsage adds a step's model calls' usage to a turn's totals.
func addUsage(u *Tokens, st *Step) {
	for _, a := range st.Attempts {
		u.add(a.Usage)
	}
}

func clampCall(tc *ToolCall, st *Step) {
	if !tc.done {
		tc.EndTime = st.EndTime
	}
	tc.StartTime, tc.EndTime = clampInto(tc.StartTime, tc.EndTime, st.StartTime, st.EndTime, &tc.Clamped)
	for _, sub := range tc.SubCalls {
		if !sub.done {
			sub.EndTime = tc.EndTime
		}
		sub.StartTime, sub.EndTime = clampInto(sub.StartTime, sub.EndTime, tc.StartTime, tc.EndTime, &sub.Clamped)
	}
}

// clampInto keeps [start, end] inside [ps, pe] and end ≥ start, flagging any change.
func clampInto(start, end, ps, pe int64, flag *bool) (int64, int64) {
	s, e := min(max(start, ps), pe), min(max(end, ps), pe)
	if e < s {
		e = s
	}
	if s != start || e != end {
		*flag = true
	}
	return s, e
}

// closeStep ends the open step at end; open marks a step with no step/end.
func (ot *openTurn) closeStep(end int64, open bool) {
	st := ot.step
	st.EndTime, st.Open = end, open
	if open {
		st.EndTime = max(st.StartTime, ot.lastTime)
	}
	if st.EndTime < st.StartTime {
		st.EndTime, st.Clamped = st.StartTime, true
	}
	for _, a := range st.Attempts {
		if !a.closed {
			a.EndTime, a.closed = st.EndTime, true
		}
	}
	ot.step = nil
}

// newAttempt starts the next model attempt of the step. The first attempt
// starts at step/start, a retry at its llm/retry-started, else at the
// event that shows it.
func (s *session) newAttempt(st *Step, ev *sessionlog.Event) *Attempt {
	ot := s.turn
	a := &Attempt{Index: len(st.Attempts) + 1, Provider: s.provider, Model: s.model,
		firstSeq: ev.Seq, lastSeq: ev.Seq, MessageSeq: -1}
	switch {
	case ot.hasRetryStart:
		a.StartTime = ot.retryStart
		ot.hasRetryStart = false
	case len(st.Attempts) == 0:
		a.StartTime = st.StartTime
	default:
		a.StartTime = st.Attempts[len(st.Attempts)-1].EndTime
	}
	if s.e.cfg.CaptureContent {
		if len(st.Attempts) == 0 {
			s.captureInput(a)
		} else {
			a.InputMessages = st.Attempts[0].InputMessages
		}
	}
	st.Attempts = append(st.Attempts, a)
	return a
}

// currentAttempt is the step's attempt still streaming, if any.
func currentAttempt(st *Step) *Attempt {
	if n := len(st.Attempts); n > 0 && !st.Attempts[n-1].closed {
		return st.Attempts[n-1]
	}
	return nil
}

// chunk folds a v0/v1 (or seed) assistant/chunk into its attempt; a
// finish chunk ends the attempt (docs/format.md §13.2).
func (s *session) chunk(a *Attempt, ev *sessionlog.Event) {
	a.lastSeq = ev.Seq
	c := ev.Chunk
	switch c.Type {
	case "text-delta", "reasoning-delta", "tool-call-delta":
		if c.DeltaBytes > 0 && !a.HasFirstChunk {
			a.FirstChunkTime, a.HasFirstChunk = ev.Time, true
		}
	case "usage":
		a.Usage = ownUsage(c.Usage)
	case "finish":
		a.FinishKind = s.e.name(c.Finish.Kind)
		a.Failure = ownFailure(c.Finish.Failure)
		a.EndTime, a.closed = ev.Time, true
	}
}

// fromStream takes an embedded v2+ stream's facts into the attempt.
func (s *session) fromStream(a *Attempt, st *sessionlog.Stream) {
	if st == nil {
		return
	}
	if st.Usage != nil {
		a.Usage = ownUsage(st.Usage)
	}
	if st.Finish != nil {
		a.FinishKind = s.e.name(st.Finish.Kind)
		a.Failure = ownFailure(st.Finish.Failure)
	}
	if st.HasDelta {
		a.FirstChunkTime, a.HasFirstChunk = st.FirstDeltaTime, true
		// The stream's own clock may differ from the log's (snapshots,
		// clock steps): measure from its first record then.
		if st.HasTimes && st.FirstTime > a.StartTime+int64(24*time.Hour/time.Millisecond) {
			a.FirstChunkTime = a.StartTime + (st.FirstDeltaTime - st.FirstTime)
		}
	}
}

// message commits the step's model call (docs/format.md §6.5, §9.2): a, the attempt the
// turn model says it commits (fresh when it starts one).
func (s *session) message(st *Step, a *Attempt, fresh bool, ev *sessionlog.Event) {
	if fresh {
		s.fromStream(a, ev.Stream)
	}
	if !a.closed || ev.Stream != nil {
		a.EndTime, a.closed = ev.Time, true
	}
	a.Committed = true
	a.Interrupted = ev.Interrupted
	a.MessageSeq = ev.Seq
	a.Sources = slices.Clone(ev.Sources)
	if ev.Usage != nil { // the message's usage is authoritative for its attempt
		a.Usage = ownUsage(ev.Usage)
	}
	if ev.Provider != "" {
		a.Provider = s.e.name(ev.Provider)
	}
	if ev.Model != "" {
		a.Model = s.e.name(ev.Model)
	}
	for _, c := range ev.Advertised {
		a.Advertised = append(a.Advertised, sessionlog.ToolCallRef{ID: strings.Clone(c.ID), Name: s.e.name(c.Name)})
	}
	if s.e.cfg.CaptureContent {
		s.captureChat(a, ev)
	}
}

func outcome(isError bool) string {
	if isError {
		return "error"
	}
	return "ok"
}

// toolResult closes the call the turn model paired the result with
// (docs/format.md §13.3, turnmodel.Calls).
func (s *session) toolResult(st *Step, ev *sessionlog.Event, pl turnmodel.Place) {
	ot := s.turn
	var tc *ToolCall
	if pl.Paired {
		tc = ot.callsBySeq[pl.CallSeq]
		delete(ot.callsBySeq, pl.CallSeq)
	}
	if tc == nil {
		// A call that never started (crash repair's TOOL_NOT_STARTED), or a
		// result that closes no call: a zero-length span, so the failed
		// request is not invisible.
		name := s.advertisedName(st, ev.CallID)
		if name == "" {
			name = s.e.name(ev.ToolName) // the seed dialect names the tool on the result
		}
		tc = &ToolCall{CallID: strings.Clone(ev.CallID), Name: name, StartTime: ev.Time, StartSeq: ev.Seq,
			LoggedStartTime: ev.Time, NotStarted: true}
		st.Tools = append(st.Tools, tc)
	}
	tc.EndTime, tc.LoggedEndTime, tc.done = ev.Time, ev.Time, true
	tc.Outcome, tc.ErrorCode = outcome(ev.IsError), s.e.name(ev.ErrorCode)
	if evid := ot.t.evidence; evid != nil {
		evid.Result(ev.Seq, tc.CallID, ev.IsError, ev.ResultHash)
	}
	if s.e.cfg.CaptureContent {
		s.captureResult(tc, ev)
	}
}

// advertisedName is the tool name a step's message gave the call.
func (s *session) advertisedName(st *Step, callID string) string {
	for _, a := range st.Attempts {
		for _, c := range a.Advertised {
			if c.ID == callID {
				return c.Name
			}
		}
	}
	return ""
}

func (ot *openTurn) findCall(callID string) *ToolCall {
	if ot.step == nil {
		return nil
	}
	for _, tc := range slices.Backward(ot.step.Tools) {
		if tc.CallID == callID {
			return tc
		}
		for _, sub := range tc.SubCalls {
			if sub.SubCallID == callID {
				return sub
			}
		}
	}
	return nil
}

// addEvent records a span event on the open step, else on the turn.
func (ot *openTurn) addEvent(ev *sessionlog.Event, name string, attrs ...Attr) {
	ownAttrs(attrs)
	se := SpanEvent{Name: name, Time: ev.Time, Seq: ev.Seq, Attrs: attrs}
	if ot.step != nil {
		ot.step.Events = append(ot.step.Events, se)
		return
	}
	ot.t.Events = append(ot.t.Events, se)
}

// addEventOnCall records a span event on a tool call's span when the call
// is in the open step.
func (ot *openTurn) addEventOnCall(ev *sessionlog.Event, name, callID string, attrs ...Attr) {
	if callID != "" && ot.findCall(callID) != nil {
		ownAttrs(attrs)
		se := SpanEvent{Name: name, Time: ev.Time, Seq: ev.Seq, Attrs: attrs, CallID: strings.Clone(callID)}
		ot.step.Events = append(ot.step.Events, se)
		return
	}
	ot.addEvent(ev, name, attrs...)
}

// The decoder's strings are views into the row they came from, so a string
// kept in an open turn would keep its whole row alive — a tool result or a
// model stream of up to 4 MiB for one call id. What the engine keeps past
// the event is copied first (Engine.name for the names that repeat,
// strings.Clone for ids, ownAttrs, ownFailure); what it only reads is not.

// ownAttrs copies the string values of span event attributes in place.
func ownAttrs(attrs []Attr) {
	for i := range attrs {
		if v, ok := attrs[i].Value.(string); ok {
			attrs[i].Value = strings.Clone(v)
		}
	}
}

// ownUsage copies a usage record out of its decoder's memory (an event's
// pointers are valid only while its batch is read: sessionlog.Arena).
func ownUsage(u *sessionlog.Usage) *sessionlog.Usage {
	if u == nil {
		return nil
	}
	c := *u
	return &c
}

// ownFailure copies a model call's failure.
func ownFailure(f *sessionlog.Failure) *sessionlog.Failure {
	if f == nil {
		return nil
	}
	c := *f
	c.Code, c.Message = strings.Clone(f.Code), strings.Clone(f.Message)
	return &c
}
