package turnengine

import (
	"container/list"
	"slices"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/sessionlog"
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

	lruElem, openElem *list.Element

	turn           *openTurn
	lastClosedTurn int64

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
	// pending are the open tool calls of the open step, in start order.
	pending []*ToolCall
	// subs are open dispatch sub-calls by subCallId.
	subs map[string]*ToolCall
	// callsBySeq maps tool/call seqs to calls (seed-dialect pairing).
	callsBySeq map[int64]*ToolCall
}

func newSession(id string, e *Engine) *session {
	s := &session{e: e, id: strings.Clone(id), buf: map[int64]*sessionlog.Event{}}
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
		e.stats.Events++
		e.metrics.recordEvent(ev.Type)
	}
	if !s.gappy {
		// A gappy feed (dsh's v0 OTLP export) has neither dense seqs nor
		// surface keys: there is nothing to validate it against.
		for _, v := range s.validator.Event(ev, s.format) {
			if restoring {
				continue
			}
			e.stats.Violations++
			e.metrics.RecordViolation(v.Code)
		}
	}
	if ev.Type == "turn/start" {
		s.lastTurnStart = ev.Seq
	}
	if !e.cfg.KeepInherited && s.header != nil && s.header.HasSeedLength && ev.Seq < s.header.SeedLength {
		// Inherited from the parent session, whose spans these are (docs/format.md §11.5).
		return
	}
	if s.deriver != nil {
		// Folded after the event's own handling, so an attempt's input is
		// the history before its step's first model event.
		defer s.deriver.Event(ev, s.format)
	}
	ot := s.turn
	if ot != nil {
		ot.lastTime = max(ot.lastTime, ev.Time)
	}
	switch ev.Type {
	case "turn/start":
		s.turnStart(ev)
	case "turn/end":
		if ot == nil || !ev.HasTurn || ev.Turn != ot.t.Number {
			s.stray(ev)
			return
		}
		s.closeTurn(ev.Reason, "", ev.Time, ev.Seq)
	case "step/start":
		if ot == nil || ev.Turn != ot.t.Number {
			s.stray(ev)
			return
		}
		if ot.step != nil {
			ot.closeStep(ev.Time, true)
		}
		ot.step = &Step{Number: ev.Step, StartTime: ev.Time, StartSeq: ev.Seq}
		ot.t.Steps = append(ot.t.Steps, ot.step)
		ot.pending = ot.pending[:0]
		clear(ot.callsBySeq)
	case "step/end":
		if st := s.stepOf(ev); st != nil {
			ot.closeStep(ev.Time, false)
		}
	case "request/header", "request/context":
		if ev.Provider != "" {
			s.provider = s.e.name(ev.Provider)
		}
		if ev.Model != "" {
			s.model = s.e.name(ev.Model)
		}
	case "assistant/chunk":
		if st := s.stepOf(ev); st != nil {
			s.chunk(st, ev)
		}
	case "assistant/attempt":
		if st := s.stepOf(ev); st != nil {
			a := s.newAttempt(st, ev)
			s.fromStream(a, ev.Stream)
			a.EndTime = ev.Time
			a.closed = true
		}
	case "assistant/message":
		if st := s.stepOf(ev); st != nil {
			s.message(st, ev)
		}
	case "llm/retry-started":
		if ot != nil {
			ot.retryStart, ot.hasRetryStart = ev.Time, true
			ot.addEvent(ev, "dsh.llm.retry_started", Attr{"dsh.retry", ev.Retry})
		}
	case "llm/retry":
		if ot != nil {
			attrs := []Attr{{"dsh.retry", ev.Retry}}
			if ev.Failure != nil {
				attrs = append(attrs, Attr{"error.type", ev.Failure.Code})
			}
			ot.addEvent(ev, "dsh.llm.retry", attrs...)
		}
	case "tool/call":
		if st := s.stepOf(ev); st != nil {
			tc := &ToolCall{CallID: strings.Clone(ev.CallID), Name: e.name(ev.ToolName), StartTime: ev.Time, StartSeq: ev.Seq,
				LoggedStartTime: ev.Time, Outcome: "unknown"}
			if e.cfg.CaptureContent {
				tc.Arguments = truncateArguments(ev.Arguments, e.cfg.MaxContentBytes)
			}
			st.Tools = append(st.Tools, tc)
			ot.pending = append(ot.pending, tc)
			ot.callsBySeq[ev.Seq] = tc
		}
	case "tool/result":
		if ev.Surface.Kind == sessionlog.SurfaceReplace {
			if ot != nil {
				ot.addEvent(ev, "dsh.tool.result_rewritten", Attr{"gen_ai.tool.call.id", ev.CallID})
			}
			return
		}
		if st := s.stepOf(ev); st != nil {
			s.toolResult(st, ev)
		}
	case "tool/ptc-dispatch-start", "tool/code-dispatch-start":
		if ot != nil && ot.step != nil {
			parent := ot.findCall(ev.CallID)
			if parent == nil {
				e.stats.Orphans++
				return
			}
			sub := &ToolCall{CallID: strings.Clone(ev.CallID), SubCallID: strings.Clone(ev.SubCallID), Name: e.name(ev.ToolName),
				StartTime: ev.Time, StartSeq: ev.Seq, LoggedStartTime: ev.Time, Outcome: "unknown"}
			parent.SubCalls = append(parent.SubCalls, sub)
			ot.subs[sub.SubCallID] = sub
		} else {
			e.stats.Orphans++
		}
	case "tool/ptc-dispatch", "tool/code-dispatch":
		if ot == nil || ot.subs[ev.SubCallID] == nil {
			e.stats.Orphans++
			return
		}
		sub := ot.subs[ev.SubCallID]
		delete(ot.subs, ev.SubCallID)
		sub.EndTime, sub.LoggedEndTime, sub.done = ev.Time, ev.Time, true
		sub.Outcome, sub.ErrorCode = outcome(ev.IsError), e.name(ev.ErrorCode)
	case "user/message":
		if ot != nil {
			ot.addEvent(ev, "dsh.user.message", Attr{"dsh.message.source", ev.SourceKind})
		}
	case "approval/asked":
		if ot != nil {
			ot.addEventOnCall(ev, "dsh.approval.asked", ev.CallID, Attr{"gen_ai.tool.name", ev.ToolName})
		}
	case "compaction/start", "compaction/summary", "compaction/prune", "compaction/end",
		"approval/decided", "hook/invoked", "hook/result", "session/end-seed":
		if ot != nil {
			ot.addEvent(ev, "dsh."+strings.ReplaceAll(ev.Type, "/", "."))
		}
	}
}

// stray handles a turn or step event that fits no open turn: late for a
// closed one, otherwise an orphan.
func (s *session) stray(ev *sessionlog.Event) {
	if ev.HasTurn && ev.Turn <= s.lastClosedTurn {
		s.e.stats.Late++
		return
	}
	s.e.stats.Orphans++
}

// stepOf returns the open step the event names, counting strays.
func (s *session) stepOf(ev *sessionlog.Event) *Step {
	ot := s.turn
	if ot == nil || ot.step == nil || !ev.HasTurn || ev.Turn != ot.t.Number || (ev.HasStep && ev.Step != ot.step.Number) {
		s.stray(ev)
		return nil
	}
	return ot.step
}

func (s *session) turnStart(ev *sessionlog.Event) {
	if ev.HasTurn && ev.Turn <= s.lastClosedTurn {
		s.e.stats.Late++
		return
	}
	if s.turn != nil {
		s.e.closeDangling(s, CauseSuperseded)
	}
	t := &Turn{
		SessionID: s.id, Number: ev.Turn, Agent: s.agent(),
		StartTime: ev.Time, StartSeq: ev.Seq, EndSeq: -1,
	}
	s.turn = &openTurn{t: t, lastTime: ev.Time, subs: map[string]*ToolCall{}, callsBySeq: map[int64]*ToolCall{}}
	s.e.turnOpened(s)
}

// closeTurn finishes the open turn: it closes what is still open, clamps
// times into their parents and hands the turn to the engine.
func (s *session) closeTurn(reason sessionlog.Reason, cause string, end, endSeq int64) {
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
		st.StartTime, st.EndTime = clampInto(st.StartTime, st.EndTime, t.StartTime, t.EndTime, &st.Clamped)
		for _, a := range st.Attempts {
			a.StartTime, a.EndTime = clampInto(a.StartTime, a.EndTime, st.StartTime, st.EndTime, &a.Clamped)
			if a.HasFirstChunk && (a.FirstChunkTime < a.StartTime || a.FirstChunkTime > a.EndTime) {
				a.FirstChunkTime = min(max(a.FirstChunkTime, a.StartTime), a.EndTime)
				a.Clamped = true
			}
			t.Usage.add(a.Usage)
		}
		for _, tc := range st.Tools {
			clampCall(tc, st)
		}
	}
	s.turn = nil
	s.lastClosedTurn = t.Number
	s.e.turnClosed(s, t)
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
	ot.pending = ot.pending[:0]
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

// chunk folds a v0/v1 (or seed) assistant/chunk into the streaming attempt;
// a finish chunk ends the attempt (docs/format.md §13.2).
func (s *session) chunk(st *Step, ev *sessionlog.Event) {
	a := currentAttempt(st)
	if a == nil {
		a = s.newAttempt(st, ev)
	}
	a.lastSeq = ev.Seq
	c := ev.Chunk
	switch c.Type {
	case "text-delta", "reasoning-delta", "tool-call-delta":
		if c.DeltaBytes > 0 && !a.HasFirstChunk {
			a.FirstChunkTime, a.HasFirstChunk = ev.Time, true
		}
	case "usage":
		a.Usage = c.Usage
	case "finish":
		a.FinishKind = s.e.name(c.Finish.Kind)
		a.Failure = c.Finish.Failure
		a.EndTime, a.closed = ev.Time, true
	}
}

// fromStream takes an embedded v2+ stream's facts into the attempt.
func (s *session) fromStream(a *Attempt, st *sessionlog.Stream) {
	if st == nil {
		return
	}
	if st.Usage != nil {
		a.Usage = st.Usage
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

// message commits the step's model call (docs/format.md §6.5, §9.2).
func (s *session) message(st *Step, ev *sessionlog.Event) {
	var a *Attempt
	if ev.Stream == nil {
		// v0/v1 (and seed): the committed attempt is the one whose chunks
		// the message cites, else the attempt still streaming.
		for _, cand := range slices.Backward(st.Attempts) {
			if !cand.Committed && (slices.Contains(ev.Sources, cand.lastSeq) || slices.Contains(ev.Sources, cand.firstSeq)) {
				a = cand
				break
			}
		}
		if a == nil {
			a = currentAttempt(st)
		}
	}
	if a == nil {
		a = s.newAttempt(st, ev)
		s.fromStream(a, ev.Stream)
	}
	if !a.closed || ev.Stream != nil {
		a.EndTime, a.closed = ev.Time, true
	}
	a.Committed = true
	a.Interrupted = ev.Interrupted
	a.MessageSeq = ev.Seq
	a.Sources = ev.Sources
	if ev.Usage != nil { // the message's usage is authoritative for its attempt
		a.Usage = ev.Usage
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

// toolResult closes the call a result answers (docs/format.md §13.3).
func (s *session) toolResult(st *Step, ev *sessionlog.Event) {
	ot := s.turn
	var tc *ToolCall
	pick := func(f func(*ToolCall) bool) {
		if tc == nil {
			if i := slices.IndexFunc(ot.pending, f); i >= 0 {
				tc = ot.pending[i]
			}
		}
	}
	switch {
	case ev.CallID != "":
		pick(func(c *ToolCall) bool { return c.CallID == ev.CallID })
	default:
		if len(ev.Sources) > 0 {
			if c := ot.callsBySeq[ev.Sources[0]]; c != nil && !c.done {
				tc = c
			}
		}
		if ev.ToolName != "" {
			pick(func(c *ToolCall) bool { return c.Name == ev.ToolName })
		}
		pick(func(*ToolCall) bool { return true })
	}
	if tc == nil {
		// A call that never started (crash repair's TOOL_NOT_STARTED): a
		// zero-length span, so the failed request is not invisible.
		name := s.advertisedName(st, ev.CallID)
		if name == "" {
			name = s.e.name(ev.ToolName) // the seed dialect names the tool on the result
		}
		tc = &ToolCall{CallID: strings.Clone(ev.CallID), Name: name, StartTime: ev.Time, StartSeq: ev.Seq,
			LoggedStartTime: ev.Time, NotStarted: true}
		st.Tools = append(st.Tools, tc)
	}
	ot.pending = slices.DeleteFunc(ot.pending, func(c *ToolCall) bool { return c == tc })
	tc.EndTime, tc.LoggedEndTime, tc.done = ev.Time, ev.Time, true
	tc.Outcome, tc.ErrorCode = outcome(ev.IsError), s.e.name(ev.ErrorCode)
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

// ownFailure copies a model call's failure.
func ownFailure(f *sessionlog.Failure) *sessionlog.Failure {
	if f == nil {
		return nil
	}
	c := *f
	c.Code, c.Message = strings.Clone(f.Code), strings.Clone(f.Message)
	return &c
}
