package turnengine

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// Content capture is opt-in: prompts, outputs and tool payloads are
// personal data. With it on, chat spans carry the history the model saw
// and what it wrote, tool spans their arguments and results.

// captureInput records the history the model saw: the session's derived
// history just before the step's first model event (docs/format.md §8.4).
func (s *session) captureInput(a *Attempt) {
	if s.deriver == nil {
		return
	}
	b, err := json.Marshal(s.deriver.History())
	if err != nil {
		return
	}
	a.InputMessages = truncateJSON(string(b), s.e.cfg.MaxContentBytes)
}

// captureChat records the committed message's content as the output.
func (s *session) captureChat(a *Attempt, ev *sessionlog.Event) {
	content := messageContent(ev)
	if content == "" {
		return
	}
	out := `[{"role":"assistant","content":` + content + `}]`
	a.OutputMessages = truncateJSON(out, s.e.cfg.MaxContentBytes)
}

// captureResult records a tool result's content.
func (s *session) captureResult(tc *ToolCall, ev *sessionlog.Event) {
	if content := messageContent(ev); content != "" {
		tc.Result = truncateJSON(content, s.e.cfg.MaxContentBytes)
	}
}

// messageContent is the content of an event's message as JSON, from the
// event's one-message history projection.
func messageContent(ev *sessionlog.Event) string {
	d := sessionlog.NewDeriver()
	f := sessionlog.Format{Version: 4, Known: true}
	if ev.Type == "tool/result" && ev.Role != "tool" {
		f = sessionlog.Format{Version: 0, Known: true}
	}
	// Project the event as a lone append, whatever its surfaceOp.
	e := *ev
	e.Surface = sessionlog.SurfaceOp{Kind: sessionlog.SurfaceAppend}
	d.Event(&e, f)
	h := d.History()
	if h.Len() == 0 {
		return ""
	}
	return h.At(0).Content()
}

// truncateArguments keeps tool arguments within max bytes: valid JSON stays
// valid JSON, anything else is cut as text.
func truncateArguments(args string, max int) string {
	if json.Valid([]byte(args)) {
		return truncateJSON(args, max)
	}
	return truncateString(args, max)
}

// truncateString cuts s to at most max bytes on a rune boundary, marking the cut.
func truncateString(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "…"
	cut := max - len(mark)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// truncateJSON shrinks a JSON document to at most max bytes while keeping
// it valid JSON: every string is cut to a shrinking limit first; when that
// is not enough, arrays keep a shrinking number of leading elements.
func truncateJSON(doc string, max int) string {
	if len(doc) <= max {
		return doc
	}
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return truncateString(doc, max)
	}
	fits := func(x any) (string, bool) {
		b, err := json.Marshal(x)
		return string(b), err == nil && len(b) <= max
	}
	for limit := max; limit >= 16; limit /= 2 {
		if out, ok := fits(shrink(v, limit, -1)); ok {
			return out
		}
	}
	for n := 64; n >= 0; n /= 2 {
		if out, ok := fits(shrink(v, 16, n)); ok {
			return out
		}
		if n == 0 {
			break
		}
	}
	if _, isArray := v.([]any); isArray {
		return "[]"
	}
	return `"…"`
}

// shrink copies a decoded JSON tree with every string cut to strLimit bytes
// and, when maxElems ≥ 0, every array cut to maxElems elements.
func shrink(v any, strLimit, maxElems int) any {
	switch x := v.(type) {
	case string:
		return truncateString(x, strLimit)
	case []any:
		n := len(x)
		if maxElems >= 0 && n > maxElems {
			n = maxElems
		}
		out := make([]any, n)
		for i := range out {
			out[i] = shrink(x[i], strLimit, maxElems)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = shrink(e, strLimit, maxElems)
		}
		return out
	}
	return v
}
