package turnrender

import (
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// The ids of a turn's spans are the turn model's (turnmodel/ids.go), as
// pdata types.

// TraceID is the trace of a session's turn.
func TraceID(session string, turn int64) pcommon.TraceID {
	return pcommon.TraceID(turnmodel.TraceIDOf(session, turn))
}

// TurnSpanID is the root span of a turn's trace.
func TurnSpanID(session string, turn int64) pcommon.SpanID {
	return pcommon.SpanID(turnmodel.TurnSpanID(session, turn))
}

// StepSpanID is a step's span.
func StepSpanID(session string, turn, step int64) pcommon.SpanID {
	return pcommon.SpanID(turnmodel.StepSpanID(session, turn, step))
}

// ChatSpanID is the span of a step's attempt-th model call (from 1).
func ChatSpanID(session string, turn, step int64, attempt int) pcommon.SpanID {
	return pcommon.SpanID(turnmodel.ChatSpanID(session, turn, step, attempt))
}

// ToolSpanID is the span of a tool call; subCallID is empty for the call
// itself and names a nested dispatch otherwise.
func ToolSpanID(session string, turn, step int64, callID, subCallID string) pcommon.SpanID {
	return pcommon.SpanID(turnmodel.ToolSpanID(session, turn, step, callID, subCallID))
}
