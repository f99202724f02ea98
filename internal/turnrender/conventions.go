package turnrender

import (
	"time"

	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// The values dsh's names take in the GenAI conventions, shared by spans
// and metrics.

// ProviderName is gen_ai.provider.name for a dsh provider id: the
// conventions' well-known value where there is one (dsh's
// "deepseek-official" route is the conventions' "deepseek"), else dsh's id.
func ProviderName(dsh string) string {
	switch dsh {
	case "deepseek-official":
		return "deepseek"
	}
	return dsh
}

// finishReason is a model call's finish reason for
// gen_ai.response.finish_reasons, in the conventions' values: dsh's stop,
// tool-calls and max-tokens are stop, tool_call and length; an error or
// aborted stream, and a generation that ended with no finish and no
// committed message (cut off), ended abnormally: error. Other kinds pass
// as dsh names them; a committed message without a finish has none.
func finishReason(a *turnengine.Attempt) string {
	switch a.FinishKind {
	case "":
		if !a.Committed {
			return "error"
		}
		return ""
	case "stop":
		return "stop"
	case "tool-calls":
		return "tool_call"
	case "max-tokens":
		return "length"
	case "error", "aborted":
		return "error"
	}
	return a.FinishKind
}

// toolErrorType is a failed tool call's error.type: its error code, else
// tool_error.
func toolErrorType(tc *turnengine.ToolCall) string {
	if tc.ErrorCode != "" {
		return tc.ErrorCode
	}
	return "tool_error"
}

// reasonKind is the turn's end reason for attributes: the TurnEndReason
// kind, "dangling", or "unknown" for a turn/end without one.
func reasonKind(t *turnengine.Turn) string {
	if t.Dangling() {
		return "dangling"
	}
	if t.Reason.Kind == "" {
		return "unknown"
	}
	return t.Reason.Kind
}

func seconds(ms int64) float64 { return float64(ms) / 1000 }

func msToNanos(ms int64) int64 { return ms * int64(time.Millisecond) }
