package turnengine

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// IDs are hashes of stable keys (session, turn, step, attempt, callId), so
// replays, restarts and replicas agree on them and a turn's events may
// arrive in any batching. Each field is length-prefixed after a domain tag,
// so no two keys share an input.
func hashKey(tag string, fields ...string) [32]byte {
	buf := make([]byte, 0, 64)
	buf = binary.AppendUvarint(buf, uint64(len(tag)))
	buf = append(buf, tag...)
	for _, f := range fields {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	return sha256.Sum256(buf)
}

func num(n int64) string { return strconv.FormatInt(n, 10) }

// TraceID is the trace of a session's turn.
func TraceID(session string, turn int64) pcommon.TraceID {
	h := hashKey("trace", session, num(turn))
	var id pcommon.TraceID
	copy(id[:], h[:16])
	if id.IsEmpty() {
		id[15] = 1
	}
	return id
}

func spanID(tag string, fields ...string) pcommon.SpanID {
	h := hashKey(tag, fields...)
	var id pcommon.SpanID
	copy(id[:], h[:8])
	if id.IsEmpty() {
		id[7] = 1
	}
	return id
}

// TurnSpanID is the root span of a turn's trace.
func TurnSpanID(session string, turn int64) pcommon.SpanID {
	return spanID("turn", session, num(turn))
}

// StepSpanID is a step's span.
func StepSpanID(session string, turn, step int64) pcommon.SpanID {
	return spanID("step", session, num(turn), num(step))
}

// ChatSpanID is the span of a step's attempt-th model call (from 1).
func ChatSpanID(session string, turn, step int64, attempt int) pcommon.SpanID {
	return spanID("chat", session, num(turn), num(step), strconv.Itoa(attempt))
}

// ToolSpanID is the span of a tool call; subCallID is empty for the call
// itself and names a nested dispatch otherwise.
func ToolSpanID(session string, turn, step int64, callID, subCallID string) pcommon.SpanID {
	if subCallID == "" {
		return spanID("tool", session, num(turn), num(step), callID)
	}
	return spanID("subcall", session, num(turn), num(step), callID, subCallID)
}
