package sessionlog

import (
	"encoding/json"
	"fmt"
)

// Violation codes. They are stable: tools, metrics (dsh.violation) and
// tests key on them. Each names the rule of docs/format.md it enforces.
const (
	// Row decoding (docs/format.md §2.4, §4, §5).
	CodeRowTooLong        = "ROW_TOO_LONG"        // a row longer than the configured limit
	CodeUTF8Invalid       = "UTF8_INVALID"        // a row that is not valid UTF-8
	CodeJSONInvalid       = "JSON_INVALID"        // a row that is not one JSON value
	CodeJSONTooDeep       = "JSON_TOO_DEEP"       // nesting beyond the configured depth
	CodeRowNotObject      = "ROW_NOT_OBJECT"      // a row that is JSON but not an object
	CodeEnvelopeInvalid   = "ENVELOPE_INVALID"    // type/seq/time/data missing or mistyped
	CodeNotLossless       = "DATA_NOT_LOSSLESS"   // -0, non-safe integer or non-finite number
	CodePackedRowInvalid  = "PACKED_ROW_INVALID"  // a packed chunk row off its exact schema
	CodeHeaderInvalid     = "HEADER_INVALID"      // a header line off its schema
	CodeHeaderMisplaced   = "HEADER_MISPLACED"    // a header line after the first row
	CodeWrapperInvalid    = "WRAPPER_INVALID"     // a line wrapper without its session id or event
	CodeEnvelopeExtraKeys = "ENVELOPE_EXTRA_KEYS" // v2+: a top-level key outside the closed envelope
	CodeSourcesInvalid    = "SOURCES_INVALID"     // sourceEventSeqs malformed, not earlier, not unique
	CodeSurfaceOpInvalid  = "SURFACE_OP_INVALID"  // a surfaceOp of no known form
	CodeSurfaceOpMissing  = "SURFACE_OP_MISSING"  // a surface event without surfaceOp
	CodeSurfaceKeysLogged = "SURFACE_KEYS_ON_LOG_ONLY"

	// Sequence (docs/format.md §4, §11.2).
	CodeSeqGap        = "SEQ_GAP"
	CodeSeqDuplicate  = "SEQ_DUPLICATE"
	CodeSeqRegression = "SEQ_REGRESSION"
	CodeSeqNotZero    = "SEQ_NOT_ZERO" // a file's first event not at seq 0

	// Turn and step state machine (docs/format.md §11.2).
	CodeTurnAlreadyOpen  = "TURN_ALREADY_OPEN"
	CodeTurnNotNext      = "TURN_NOT_NEXT"
	CodeTurnEndNotOpen   = "TURN_END_NOT_OPEN"
	CodeTurnEndStepOpen  = "TURN_END_STEP_OPEN"
	CodeStepOutsideTurn  = "STEP_OUTSIDE_TURN"
	CodeStepAlreadyOpen  = "STEP_ALREADY_OPEN"
	CodeStepNotNext      = "STEP_NOT_NEXT"
	CodeStepEndNotOpen   = "STEP_END_NOT_OPEN"
	CodeEventOutsideStep = "EVENT_OUTSIDE_STEP"
	CodeEventOutsideTurn = "EVENT_OUTSIDE_TURN"

	// Tool calls (docs/format.md §11.2, §11.3).
	CodeToolCallNotAdvertised = "TOOL_CALL_NOT_ADVERTISED"
	CodeToolCallDuplicate     = "TOOL_CALL_DUPLICATE"
	CodeToolResultNoCall      = "TOOL_RESULT_NO_CALL"
	CodeToolCallUnresolved    = "TOOL_CALL_UNRESOLVED"

	// Surface (docs/format.md §8).
	CodeReplaceNotOnSurface = "REPLACE_NOT_ON_SURFACE"
	CodeReplaceInverted     = "REPLACE_RANGE_INVERTED"
	CodeReplaceNotCited     = "REPLACE_NOT_CITED"
	CodeSourcesForbidden    = "SOURCES_FORBIDDEN" // v3+ assistant/message with sourceEventSeqs

	// Version-specific payload rules (docs/format.md §11.1).
	CodeSystemForbidden     = "REQUEST_SYSTEM_FORBIDDEN"    // v3+: request/header carries header.system
	CodeErrorWithoutIsError = "TOOL_ERROR_WITHOUT_IS_ERROR" // v4: tool/result.error without isError: true

	// Header relations (docs/format.md §3, §11.3).
	CodeSeededMismatch = "SEEDED_MISMATCH" // v2+: isSeeded without a tagged end-seed or the reverse
)

// String renders a violation as `seq S: CODE: message`.
func (v Violation) String() string {
	if v.Seq < 0 {
		return fmt.Sprintf("seq -: %s: %s", v.Code, v.Message)
	}
	return fmt.Sprintf("seq %d: %s: %s", v.Seq, v.Code, v.Message)
}

// MarshalJSON writes an unknown seq as null.
func (v Violation) MarshalJSON() ([]byte, error) {
	var seq any
	if v.Seq >= 0 {
		seq = v.Seq
	}
	return json.Marshal(struct {
		Line    int    `json:"line"`
		Seq     any    `json:"seq"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}{v.Line, seq, v.Code, v.Message})
}
