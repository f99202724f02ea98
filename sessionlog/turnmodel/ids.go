package turnmodel

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
)

// TraceID and SpanID are OTLP's 16- and 8-byte ids.
type (
	TraceID [16]byte
	SpanID  [8]byte
)

// Ids are hashes of stable keys (session, turn, step, attempt, callId), so
// replays, restarts and replicas agree on them and a turn's events may
// arrive in any batching. Each field is length-prefixed after a domain tag,
// so no two keys share an input. Keys are built in a stack buffer with
// numbers formatted in place: an id costs one SHA-256 and no allocation.
type keyBuf [160]byte

func keyStr(b []byte, f string) []byte {
	b = binary.AppendUvarint(b, uint64(len(f)))
	return append(b, f...)
}

func keyNum(b []byte, n int64) []byte {
	var d [20]byte
	digits := strconv.AppendInt(d[:0], n, 10)
	b = binary.AppendUvarint(b, uint64(len(digits)))
	return append(b, digits...)
}

func spanIDOf(h [32]byte) SpanID {
	var id SpanID
	copy(id[:], h[:8])
	if id == (SpanID{}) {
		id[7] = 1
	}
	return id
}

// TraceIDOf is the trace of a session's turn.
func TraceIDOf(session string, turn int64) TraceID {
	var buf keyBuf
	b := keyNum(keyStr(keyStr(buf[:0], "trace"), session), turn)
	h := sha256.Sum256(b)
	var id TraceID
	copy(id[:], h[:16])
	if id == (TraceID{}) {
		id[15] = 1
	}
	return id
}

// TurnSpanID is the root span of a turn's trace.
func TurnSpanID(session string, turn int64) SpanID {
	var buf keyBuf
	b := keyNum(keyStr(keyStr(buf[:0], "turn"), session), turn)
	return spanIDOf(sha256.Sum256(b))
}

// StepSpanID is a step's span.
func StepSpanID(session string, turn, step int64) SpanID {
	var buf keyBuf
	b := keyNum(keyNum(keyStr(keyStr(buf[:0], "step"), session), turn), step)
	return spanIDOf(sha256.Sum256(b))
}

// ChatSpanID is the span of a step's attempt-th model call (from 1).
func ChatSpanID(session string, turn, step int64, attempt int) SpanID {
	var buf keyBuf
	b := keyNum(keyNum(keyNum(keyStr(keyStr(buf[:0], "chat"), session), turn), step), int64(attempt))
	return spanIDOf(sha256.Sum256(b))
}

// ToolSpanID is the span of a tool call; subCallID is empty for the call
// itself and names a nested dispatch otherwise.
func ToolSpanID(session string, turn, step int64, callID, subCallID string) SpanID {
	var buf keyBuf
	tag := "tool"
	if subCallID != "" {
		tag = "subcall"
	}
	b := keyStr(keyNum(keyNum(keyStr(keyStr(buf[:0], tag), session), turn), step), callID)
	if subCallID != "" {
		b = keyStr(b, subCallID)
	}
	return spanIDOf(sha256.Sum256(b))
}

// LateCloseSpanID is the span that tells how a turn closed as dangling
// ended after all (its turn/end arrived late).
func LateCloseSpanID(session string, turn int64) SpanID {
	var buf keyBuf
	b := keyNum(keyStr(keyStr(buf[:0], "late-close"), session), turn)
	return spanIDOf(sha256.Sum256(b))
}
