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
// a model call nor a tool call: its type's note maker's (noteMakers), else
// the event's scalar fields. Text holds what is not content — ids, names,
// outcomes, codes, counts; Detail the content (a reason, a title, a
// failure message, a system prompt's length), kept only with content.
func (b *builder) note(st *state, e *sessionlog.Event) *Note {
	n := &Note{Seq: e.Seq, Time: e.Time, Type: b.name(e.Type), Message: -1}
	maker, ok := noteMakers[e.Type]
	if !ok {
		maker = otherNote
	}
	detail := maker(b, st, e, eventData(e), n)
	if !b.opts.NoContent {
		n.Detail = strings.Clone(detail)
	}
	n.Text = strings.Clone(n.Text)
	return n
}

// A noteMaker writes the Text of an event's note from the event and its
// data, and returns its detail. The request header and the approvals keep
// what later events need (st).
type noteMaker func(b *builder, st *state, e *sessionlog.Event, d data, n *Note) (detail string)

// noteMakers are the note makers by event type.
var noteMakers = map[string]noteMaker{
	"request/header":           requestHeaderNote,
	"request/context":          requestContextNote,
	"approval/asked":           approvalAskedNote,
	"approval/decided":         approvalDecidedNote,
	"hook/invoked":             hookInvokedNote,
	"hook/result":              hookResultNote,
	"llm/retry":                retryNote,
	"llm/retry-started":        retryStartedNote,
	"compaction/start":         compactionNote,
	"compaction/end":           compactionNote,
	"compaction/summary":       compactedNote,
	"compaction/prune":         compactedNote,
	"session/title":            titleNote,
	"session/end-seed":         seedEndNote,
	"agent/inbox/spliced":      inboxNote,
	"tool/result":              rewrittenResultNote,
	"todo/write":               todoNote,
	"command/run":              commandRunNote,
	"command/done":             commandDoneNote,
	"permission/preset":        settingNote,
	"sandbox/mode":             settingNote,
	"approval/policy":          settingNote,
	"plan/mode":                settingNote,
	"agent-preset/selected":    settingNote,
	"working-directory/change": settingNote,
}

// requestHeaderNote: the model, why the request was configured anew, the
// tools offered and whether there is a system prompt. The header holds for
// the requests that follow (st.header).
func requestHeaderNote(b *builder, st *state, e *sessionlog.Event, d data, n *Note) string {
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
	return ""
}

func requestContextNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = join(strings.Trim(d.str("provider")+"/"+d.str("model"), "/"), labelled("context window", d.num("contextWindow")),
		labelled("system prompt update", d.str("systemPromptUpdate")))
	return ""
}

// approvalAskedNote and approvalDecidedNote put the approval on its call;
// a decision names its call by the ask's id (st.asks).
func approvalAskedNote(_ *builder, st *state, e *sessionlog.Event, d data, n *Note) string {
	n.CallID = strings.Clone(e.CallID)
	if id := d.str("id"); id != "" && e.CallID != "" {
		st.asks[id] = strings.Clone(e.CallID)
	}
	n.Text = join("asked to run "+d.str("toolName"), labelled("call", e.CallID))
	return d.str("reason")
}

func approvalDecidedNote(_ *builder, st *state, _ *sessionlog.Event, d data, n *Note) string {
	n.CallID = st.asks[d.str("id")]
	n.Text = d.str("outcome")
	return ""
}

func hookInvokedNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = join(d.str("point"), d.str("dialect"), labelled("matcher", d.str("matcher")), labelled("handler", d.str("handlerId")))
	return ""
}

func hookResultNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = join(d.str("point"), d.str("decision"), labelled("exit", d.num("exitCode")), ms(d.num("durationMs")), labelled("handler", d.str("handlerId")))
	return d.str("stderrSummary")
}

func retryNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	of := ""
	if m := d.num("maxRetries"); m != "" {
		of = " of " + m
	}
	n.Text = join("retry "+d.num("retry")+of, d.str("failure", "code"), labelled("after", ms(d.num("delayMs"))), d.str("provider"))
	return d.str("failure", "message")
}

func retryStartedNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = "retry " + d.num("retry")
	return ""
}

// compactionNote is a compaction's start or end; compactedNote what it
// replaced.
func compactionNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = join(labelled("compaction", d.str("compactionId")), labelled("command", d.str("sourceCommandId")))
	return d.str("error")
}

func compactedNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = join(labelled("compaction", d.str("compactionId")),
		seqSpan("replaces", d.num("shadowedRange", "start"), d.num("shadowedRange", "end")),
		labelled("tokens", d.num("shadowedTokenCount")), strings.Trim(d.str("provider")+"/"+d.str("model"), "/"))
	return ""
}

func titleNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = labelled("source", d.str("source", "kind"))
	return d.str("title")
}

func seedEndNote(_ *builder, _ *state, e *sessionlog.Event, _ data, n *Note) string {
	if e.Inherited {
		n.Text = "the fork's inherited history ends here"
	} else {
		n.Text = "the seed ends here"
	}
	return ""
}

func inboxNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	inserted, _ := d.get("inserted").([]any)
	n.Text = join(labelled("target", d.str("target")), plural(len(inserted), "message")+" queued",
		labelled("removed", d.num("removedCount")), d.str("outcome"))
	return ""
}

// rewrittenResultNote is a tool result that replaces earlier ones (a
// surface replace); the page shows its message.
func rewrittenResultNote(_ *builder, _ *state, e *sessionlog.Event, _ data, n *Note) string {
	n.Message = e.Seq
	n.Text = join("a tool result rewritten", labelled("call", e.CallID),
		seqSpan("replaces", strconv.FormatInt(e.Surface.Start, 10), strconv.FormatInt(e.Surface.End, 10)))
	return ""
}

func todoNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	todos, _ := d.get("todos").([]any)
	n.Text = plural(len(todos), "item")
	return ""
}

func commandRunNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = join(d.str("name"), labelled("command", d.str("commandId")))
	return d.str("args")
}

func commandDoneNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = join(d.str("kind"), labelled("command", d.str("commandId")))
	return d.str("text")
}

// settingNote is a setting changed: its values, no content among them.
func settingNote(_ *builder, _ *state, _ *sessionlog.Event, d data, n *Note) string {
	n.Text = scalars(d, false)
	return ""
}

// otherNote is an event of a type the page does not know: its scalar
// fields, strings as detail.
func otherNote(_ *builder, _ *state, _ *sessionlog.Event, d data, _ *Note) string {
	return scalars(d, true)
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

// seqSpan labels a range of seqs: "label seq 2", "label seqs 2–3".
func seqSpan(label, a, b string) string {
	s := span(a, b)
	switch {
	case s == "":
		return ""
	case a == b || a == "" || b == "":
		return label + " seq " + s
	}
	return label + " seqs " + s
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
