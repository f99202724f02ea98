package turnrender

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// LateCloseSpanID is the span of a turn's late close.
func LateCloseSpanID(session string, turn int64) pcommon.SpanID {
	return pcommon.SpanID(turnmodel.LateCloseSpanID(session, turn))
}

// appendLateClose renders a late close: one span in the turn's trace, a
// child of its root (dangling, or never seen here), named for the real end
// reason, with the closers as span events.
func appendLateClose(spans ptrace.SpanSlice, t *turnengine.Turn) {
	lc := t.Late
	sp := spans.AppendEmpty()
	sp.SetTraceID(TraceID(t.SessionID, t.Number))
	sp.SetSpanID(LateCloseSpanID(t.SessionID, t.Number))
	sp.SetParentSpanID(TurnSpanID(t.SessionID, t.Number))
	sp.SetName("close_turn " + t.Agent)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(ts(t.StartTime))
	sp.SetEndTimestamp(ts(t.EndTime))
	a := sp.Attributes()
	a.PutStr("gen_ai.agent.name", t.Agent)
	a.PutStr("gen_ai.conversation.id", t.SessionID)
	a.PutStr("session.id", t.SessionID)
	a.PutInt("dsh.turn", t.Number)
	reason := reasonKind(t)
	a.PutStr("dsh.turn.end_reason", reason)
	a.PutBool("dsh.turn.closed_late", true)
	a.PutStr("dsh.dangling.cause", lc.DanglingCause)
	if lc.After > 0 {
		a.PutDouble("dsh.turn.closed_late_after", lc.After.Seconds())
	}
	if t.Reason.Failure != nil && t.Reason.Failure.Code != "" {
		a.PutStr("error.type", t.Reason.Failure.Code)
	}
	a.PutInt("dsh.event.seq", t.EndSeq)
	unknown := int64(0)
	for _, c := range lc.Closers {
		for _, at := range c.Attrs {
			if at.Key == "error.type" && at.Value == "TOOL_OUTCOME_UNKNOWN" {
				unknown++
			}
		}
	}
	if unknown > 0 {
		a.PutInt("dsh.tool.calls_outcome_unknown", unknown)
	}
	switch reason {
	case "error", "interrupted":
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("turn ended " + reason + " after it was closed as dangling (" + lc.DanglingCause + ")")
	}
	appendEvents(sp, lc.Closers, "")
}
