package turnrender

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/semconv"
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
	a.PutStr(semconv.GenAIAgentName, t.Agent)
	a.PutStr(semconv.GenAIConversationID, clientid.Session(t.SessionID))
	a.PutStr(semconv.SessionID, clientid.Session(t.SessionID))
	a.PutInt(semconv.DshTurn, t.Number)
	reason := reasonKind(t)
	a.PutStr(semconv.DshTurnEndReason, reason)
	a.PutBool(semconv.DshTurnClosedLate, true)
	a.PutStr(semconv.DshDanglingCause, lc.DanglingCause)
	if lc.After > 0 {
		a.PutDouble(semconv.DshTurnClosedLateAfter, lc.After.Seconds())
	}
	if t.Reason.Failure != nil && t.Reason.Failure.Code != "" {
		a.PutStr(semconv.ErrorType, t.Reason.Failure.Code)
	}
	a.PutInt(semconv.DshEventSeq, t.EndSeq)
	unknown := int64(0)
	for _, c := range lc.Closers {
		for _, at := range c.Attrs {
			if at.Key == semconv.ErrorType && at.Value == "TOOL_OUTCOME_UNKNOWN" {
				unknown++
			}
		}
	}
	if unknown > 0 {
		a.PutInt(semconv.DshToolCallsOutcomeUnknown, unknown)
	}
	switch reason {
	case "error", "interrupted":
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("turn ended " + reason + " after it was closed as dangling (" + lc.DanglingCause + ")")
	}
	appendEvents(sp, lc.Closers, "")
}
