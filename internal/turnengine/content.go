package turnengine

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// Content capture is opt-in: prompts, outputs and tool payloads are
// personal data. With it on, chat spans carry the history the model saw
// and what it wrote, tool spans their arguments and results.

// captureInput records what the model saw: the session's derived history
// just before the step's first model event (docs/format.md §8.4), as the GenAI
// conventions shape it — system messages as gen_ai.system_instructions
// (a list of parts), the rest as gen_ai.input.messages (a list of
// {role, parts}).
func (s *session) captureInput(a *Attempt) {
	if s.deriver == nil {
		return
	}
	sys, msgs := inputMessages(s.deriver.History())
	max := s.e.cfg.MaxContentBytes
	if len(sys) > 0 {
		if b, err := json.Marshal(sys); err == nil {
			a.SystemInstructions = truncateJSON(string(b), max)
		}
	}
	if b, err := json.Marshal(msgs); err == nil {
		a.InputMessages = truncateJSON(string(b), max)
	}
}

// captureChat records the committed message as the output: one
// {role, parts} message (the finish reason is the span's
// gen_ai.response.finish_reasons, as the conventions now want it).
func (s *session) captureChat(a *Attempt, ev *sessionlog.Event) {
	content := messageContent(ev)
	if content == "" {
		return
	}
	b, err := json.Marshal([]chatMessage{{Role: "assistant", Parts: toParts(content, "")}})
	if err != nil {
		return
	}
	a.OutputMessages = truncateJSON(string(b), s.e.cfg.MaxContentBytes)
}

// captureResult records a tool result's content.
func (s *session) captureResult(tc *ToolCall, ev *sessionlog.Event) {
	if content := messageContent(ev); content != "" {
		tc.Result = strings.Clone(truncateJSON(content, s.e.cfg.MaxContentBytes))
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

// chatMessage is one message of gen_ai.input.messages.
type chatMessage struct {
	Role  string `json:"role"`
	Parts []any  `json:"parts"`
}

// inputMessages splits a history into the system instructions' parts and
// the chat messages.
func inputMessages(h sessionlog.History) (sys []any, msgs []chatMessage) {
	msgs = []chatMessage{}
	for _, m := range h.All() {
		toolCall := ""
		if m.Role() == "tool" {
			toolCall = m.ToolCallID()
			if toolCall == "" {
				toolCall = "unknown"
			}
		}
		parts := toParts(m.Content(), toolCall)
		if m.Role() == "system" {
			sys = append(sys, parts...)
			continue
		}
		msgs = append(msgs, chatMessage{Role: m.Role(), Parts: parts})
	}
	return sys, msgs
}

// block is a dsh content block (docs/format.md §6.4), the fields the parts need.
type block struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Input      json.RawMessage `json:"input"`
	ToolCallID string          `json:"toolCallId"`
	Content    json.RawMessage `json:"content"`
}

// toParts maps dsh content blocks (a JSON array) onto the conventions'
// message parts: text, reasoning, tool_call and tool_call_response parts;
// any other block is kept as a generic part with its own type. A tool
// message (toolCall set) is one tool_call_response part whose response is
// the message's text. Content that is not a block array is one text part.
func toParts(content, toolCall string) []any {
	var blocks []json.RawMessage
	if err := json.Unmarshal([]byte(content), &blocks); err != nil {
		return []any{map[string]any{"type": "text", "content": content}}
	}
	if toolCall != "" {
		return []any{map[string]any{"type": "tool_call_response", "id": toolCall, "response": blockText(blocks)}}
	}
	parts := make([]any, 0, len(blocks))
	for _, raw := range blocks {
		var b block
		if err := json.Unmarshal(raw, &b); err != nil {
			parts = append(parts, map[string]any{"type": "text", "content": string(raw)})
			continue
		}
		switch b.Type {
		case "text", "reasoning":
			parts = append(parts, map[string]any{"type": b.Type, "content": b.Text})
		case "tool-call", "tool_use":
			p := map[string]any{"type": "tool_call", "id": b.ID, "name": b.Name}
			if args := toolArguments(b); args != nil {
				p["arguments"] = args
			}
			parts = append(parts, p)
		case "tool-result":
			var inner []json.RawMessage
			_ = json.Unmarshal(b.Content, &inner)
			parts = append(parts, map[string]any{"type": "tool_call_response", "id": b.ToolCallID, "response": blockText(inner)})
		default:
			var generic map[string]any
			if json.Unmarshal(raw, &generic) != nil || generic["type"] == nil {
				generic = map[string]any{"type": "unknown"}
			}
			parts = append(parts, generic)
		}
	}
	return parts
}

// toolArguments is a tool call's arguments: the raw JSON text dsh logs
// (or an object) decoded when it is JSON, else the text itself.
func toolArguments(b block) any {
	raw := b.Arguments
	if len(raw) == 0 {
		raw = b.Input
	}
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	if text, ok := v.(string); ok {
		var decoded any
		if json.Unmarshal([]byte(text), &decoded) == nil {
			return decoded
		}
		return text
	}
	return v
}

// blockText joins the text of text blocks, for a tool response.
func blockText(blocks []json.RawMessage) string {
	var sb strings.Builder
	for _, raw := range blocks {
		var b block
		if json.Unmarshal(raw, &b) == nil && b.Type == "text" {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(b.Text)
		}
	}
	return sb.String()
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
