package turnengine

import (
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// A turn closed as dangling may still be ended by dsh: a session resumed
// after its agent was killed gets crash repair's closers — an error
// tool/result (TOOL_OUTCOME_UNKNOWN) for each call left without one, the
// step/end, and turn/end with reason interrupted — appended to its log,
// however long after. Those events are late for the engine (the turn's
// spans went out when it dangled), but the log says how the turn ended,
// and so must the trace. The engine remembers each session's latest
// dangling turn; the closers that arrive for it are collected, and its
// turn/end yields a LateClose: one more span in the turn's trace, a child
// of its root, and a count in dsh.turns.closed_late.

// LateClose is what a late turn/end told of a turn closed as dangling.
type LateClose struct {
	// DanglingCause is how the engine had closed the turn: timeout,
	// evicted, shutdown, superseded — or unknown, for a turn this engine
	// never saw open (after a restart without a journal, or a stream joined
	// in the middle of the turn).
	DanglingCause string
	// DanglingEnd is the dangling turn's end as emitted (its last event's
	// time, ms); 0 when unknown.
	DanglingEnd int64
	// After is the arrival time between the dangling close and the
	// turn/end; 0 when unknown.
	After time.Duration
	// Closers are the late events that closed what the turn left open:
	// tool results (with their call id, outcome and error code) and step
	// ends, at most maxCloserEvents.
	Closers []SpanEvent
}

// maxCloserEvents bounds the closers kept per late turn.
const maxCloserEvents = 64

// dangled is a session's latest turn closed as dangling.
type dangled struct {
	number  int64
	agent   string
	cause   string
	end     int64     // the emitted turn's end (event time, ms)
	at      time.Time // when it was declared dangling (arrival time)
	closers []SpanEvent
	// next is the session's next seq when it was forgotten (evicted).
	next int64
}

// maxTombstones bounds the dangling turns remembered for forgotten
// (evicted) sessions.
const maxTombstones = 10000

// rememberDangling notes the session's turn t, just closed as dangling.
func (s *session) rememberDangling(t *Turn, now time.Time) {
	if t.DanglingCause == CauseEndOfInput {
		s.dangled = nil // nothing can follow the end of the input
		return
	}
	s.dangled = &dangled{number: t.Number, agent: t.Agent, cause: t.DanglingCause, end: t.EndTime, at: now}
}

// late handles an event for a turn already closed: the closers of the
// session's dangling turn are collected; its turn/end emits the late
// close — unless restoring: re-applied after a restart, its late close
// went out before. It reports whether the event was taken.
func (s *session) late(ev *sessionlog.Event, now time.Time, restoring bool) bool {
	d := s.dangled
	if d == nil || !ev.HasTurn || ev.Turn != d.number {
		return false
	}
	switch ev.Type {
	case "tool/result":
		if len(d.closers) < maxCloserEvents {
			d.closers = append(d.closers, SpanEvent{Name: "dsh.tool.result", Time: ev.Time, Seq: ev.Seq, Attrs: ownedAttrs(
				Attr{semconv.GenAIToolCallID, ev.CallID},
				Attr{semconv.DshToolOutcome, outcome(ev.IsError)},
				Attr{semconv.ErrorType, ev.ErrorCode},
			)})
		}
	case "step/end":
		if len(d.closers) < maxCloserEvents {
			d.closers = append(d.closers, SpanEvent{Name: "dsh.step.end", Time: ev.Time, Seq: ev.Seq, Attrs: []Attr{{semconv.DshStep, ev.Step}}})
		}
	case "turn/end":
		if !restoring {
			s.closeLate(d.number, d.agent, ev, now, &LateClose{DanglingCause: d.cause, DanglingEnd: d.end, After: now.Sub(d.at), Closers: d.closers})
		}
		s.dangled = nil
	default:
		return false
	}
	return true
}

// orphanEnd handles a turn/end of a turn this engine never saw open, in a
// session it joined after its start (a restart without a journal; a stream
// joined late): the turn's trace, if a collector before this one emitted
// it, learns how it ended. It reports whether the event was taken.
func (s *session) orphanEnd(ev *sessionlog.Event, now time.Time) bool {
	if ev.Type != "turn/end" || !ev.HasTurn || ev.Turn <= 0 || s.turn != nil || s.firstSeq <= 0 {
		return false
	}
	s.closeLate(ev.Turn, s.agent(), ev, now, &LateClose{DanglingCause: "unknown"})
	return true
}

func (s *session) closeLate(number int64, agent string, ev *sessionlog.Event, now time.Time, lc *LateClose) {
	t := &Turn{SessionID: s.id, Number: number, Agent: agent, Reason: ownReason(ev.Reason),
		StartTime: lc.DanglingEnd, EndTime: ev.Time, LoggedEndTime: ev.Time, StartSeq: ev.Seq, EndSeq: ev.Seq, Late: lc}
	if lc.DanglingEnd == 0 || t.EndTime < t.StartTime {
		t.StartTime = t.EndTime
	}
	s.e.stats.ClosedLate++
	s.e.turnClosed(s, t, now)
}

// ownedAttrs copies attribute values out of their row, dropping empty
// strings.
func ownedAttrs(attrs ...Attr) []Attr {
	out := attrs[:0]
	for _, a := range attrs {
		if v, ok := a.Value.(string); ok {
			if v == "" {
				continue
			}
			a.Value = strings.Clone(v)
		}
		out = append(out, a)
	}
	return out
}

// ownReason copies a turn/end reason out of its row.
func ownReason(r sessionlog.Reason) sessionlog.Reason {
	r.Kind, r.Cause, r.HookReason = strings.Clone(r.Kind), strings.Clone(r.Cause), strings.Clone(r.HookReason)
	r.Failure = ownFailure(r.Failure)
	return r
}
