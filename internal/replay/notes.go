package replay

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// data is an event's data object, decoded for display.
type data map[string]any

// eventData decodes the data of an event's logical envelope (its wrapper
// removed); nil when it has none.
func eventData(e *sessionlog.Event) data {
	if d, ok := scanData(string(e.LogicalJSON())); ok {
		return data(d)
	}
	var env struct {
		Data data `json:"data"`
	}
	if !decodeJSON(e.LogicalJSON(), &env) {
		return nil
	}
	return env.Data
}

// decodeJSON decodes b into v, numbers kept as json.Number.
func decodeJSON(b []byte, v any) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v) == nil
}

// get walks nested objects.
func (d data) get(keys ...string) any {
	var v any = map[string]any(d)
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			if dm, isData := v.(data); isData {
				m = dm
			} else {
				return nil
			}
		}
		v = m[k]
	}
	return v
}

// str is a nested string value, "" when absent or not a string.
func (d data) str(keys ...string) string {
	s, _ := d.get(keys...).(string)
	return s
}

// num is a nested number as written, "" when absent.
func (d data) num(keys ...string) string {
	switch v := d.get(keys...).(type) {
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// join joins the non-empty parts with " · ".
func join(parts ...string) string {
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " · ")
}

// labelled is "label value", or "" without a value.
func labelled(label, value string) string {
	if value == "" {
		return ""
	}
	return label + " " + value
}

// note is the line the page shows for an event that is neither a message,
// a model call nor a tool call. Text holds what is not content — ids,
// names, outcomes, codes, counts; Detail the content (a reason, a title,
// a failure message, a system prompt's length), kept only with content.
func (b *builder) note(st *state, e *sessionlog.Event, row *Row) *Note {
	n := &Note{Seq: e.Seq, Time: e.Time, Type: b.name(e.Type), Message: -1}
	d := eventData(e)
	var detail string
	switch e.Type {
	case "request/header":
		h := &RequestHeader{Seq: e.Seq, Provider: d.str("header", "config", "provider"), Model: d.str("header", "config", "model"), HasSystem: e.HasSystem}
		if tools, ok := d.get("header", "tools").([]any); ok {
			for _, t := range tools {
				if m, ok := t.(map[string]any); ok {
					name, _ := m["name"].(string)
					h.Tools = append(h.Tools, name)
				}
			}
		}
		if !b.opts.NoContent {
			h.System = systemText(d.get("header", "system"))
		}
		st.header = h
		n.Text = join(strings.Trim(h.Provider+"/"+h.Model, "/"), labelled("reason", d.str("reason")),
			plural(len(h.Tools), "tool"), map[bool]string{true: "system prompt"}[e.HasSystem])
	case "request/context":
		n.Text = join(strings.Trim(d.str("provider")+"/"+d.str("model"), "/"), labelled("context window", d.num("contextWindow")),
			labelled("system prompt update", d.str("systemPromptUpdate")))
	case "approval/asked":
		n.CallID = strings.Clone(e.CallID)
		if id := d.str("id"); id != "" && e.CallID != "" {
			st.asks[id] = strings.Clone(e.CallID)
		}
		n.Text = join("asked to run "+d.str("toolName"), labelled("call", e.CallID))
		detail = d.str("reason")
	case "approval/decided":
		n.CallID = st.asks[d.str("id")]
		n.Text = d.str("outcome")
	case "hook/invoked":
		n.Text = join(d.str("point"), d.str("dialect"), labelled("matcher", d.str("matcher")), labelled("handler", d.str("handlerId")))
	case "hook/result":
		n.Text = join(d.str("point"), d.str("decision"), labelled("exit", d.num("exitCode")), ms(d.num("durationMs")), labelled("handler", d.str("handlerId")))
		detail = d.str("stderrSummary")
	case "llm/retry":
		of := ""
		if m := d.num("maxRetries"); m != "" {
			of = " of " + m
		}
		n.Text = join("retry "+d.num("retry")+of, d.str("failure", "code"), labelled("after", ms(d.num("delayMs"))), d.str("provider"))
		detail = d.str("failure", "message")
	case "llm/retry-started":
		n.Text = "retry " + d.num("retry")
	case "compaction/start", "compaction/end":
		n.Text = join(labelled("compaction", d.str("compactionId")), labelled("command", d.str("sourceCommandId")))
		detail = d.str("error")
	case "compaction/summary", "compaction/prune":
		n.Text = join(labelled("compaction", d.str("compactionId")),
			labelled("replaces seqs", span(d.num("shadowedRange", "start"), d.num("shadowedRange", "end"))),
			labelled("tokens", d.num("shadowedTokenCount")), strings.Trim(d.str("provider")+"/"+d.str("model"), "/"))
	case "session/title":
		n.Text = labelled("source", d.str("source", "kind"))
		detail = d.str("title")
	case "agent/inbox/spliced":
		inserted, _ := d.get("inserted").([]any)
		n.Text = join(labelled("target", d.str("target")), plural(len(inserted), "message")+" queued",
			labelled("removed", d.num("removedCount")), d.str("outcome"))
	case "session/end-seed":
		if e.Inherited {
			n.Text = "the fork's inherited history ends here"
		} else {
			n.Text = "the seed ends here"
		}
	case "tool/result":
		n.Message = e.Seq
		n.Text = join("a tool result rewritten", labelled("call", e.CallID),
			labelled("replaces seqs", span(strconv.FormatInt(e.Surface.Start, 10), strconv.FormatInt(e.Surface.End, 10))))
	case "todo/write":
		todos, _ := d.get("todos").([]any)
		n.Text = plural(len(todos), "item")
	case "command/run":
		n.Text = join(d.str("name"), labelled("command", d.str("commandId")))
		detail = d.str("args")
	case "command/done":
		n.Text = join(d.str("kind"), labelled("command", d.str("commandId")))
		detail = d.str("text")
	case "permission/preset", "sandbox/mode", "approval/policy", "plan/mode", "agent-preset/selected", "working-directory/change":
		n.Text = scalars(d, false)
	default:
		detail = scalars(d, true)
	}
	if !b.opts.NoContent {
		n.Detail = strings.Clone(detail)
	}
	n.Text = strings.Clone(n.Text)
	return n
}

// systemText is a request header's system prompt as text: a string as it
// is, anything else as its JSON.
func systemText(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// scalars lists an object's scalar fields as key=value, sorted; strings
// only when content is wanted.
func scalars(d data, strs bool) string {
	var parts []string
	for k, v := range d {
		switch x := v.(type) {
		case string:
			if strs {
				parts = append(parts, k+"="+strconv.Quote(x))
			}
		case json.Number:
			parts = append(parts, k+"="+x.String())
		case bool:
			parts = append(parts, k+"="+strconv.FormatBool(x))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// errorDetail is a tool result's data.error as one line: its name and
// message (the code is the engine's).
func errorDetail(e *sessionlog.Event) string {
	d := eventData(e)
	return join(d.str("error", "name"), d.str("error", "message"))
}

// plural counts something: "1 step", "30,000 steps".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return num(n) + " " + what + "s"
}

func ms(v string) string {
	if v == "" {
		return ""
	}
	return v + " ms"
}

func span(a, b string) string {
	switch {
	case a == "" && b == "":
		return ""
	case a == b:
		return a
	}
	return a + "–" + b
}

// jsonText is a decoded value as JSON again.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
