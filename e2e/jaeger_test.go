//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// jaegerTrace fetches one trace through Jaeger's API v3 (OTLP JSON).
func jaegerTrace(ctx context.Context, base string, id pcommon.TraceID) (ptrace.Traces, error) {
	code, body, err := get(ctx, base+"/api/v3/traces/"+id.String())
	if err != nil {
		return ptrace.Traces{}, err
	}
	if code != http.StatusOK {
		return ptrace.Traces{}, fmt.Errorf("trace %s: HTTP %d %s", id, code, strings.TrimSpace(string(body)))
	}
	var wrapper struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &wrapper); err != nil {
		return ptrace.Traces{}, fmt.Errorf("trace %s: %w", id, err)
	}
	var u ptrace.JSONUnmarshaler
	return u.UnmarshalTraces(wrapper.Result)
}

// jaegerServices lists the services Jaeger knows (the agents).
func jaegerServices(ctx context.Context, base string) ([]string, error) {
	code, body, err := get(ctx, base+"/api/v3/services")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("services: HTTP %d", code)
	}
	var r struct {
		Services []string `json:"services"`
	}
	err = json.Unmarshal(body, &r)
	return r.Services, err
}

// compareTrace reports every difference between the expected spans of a
// turn and what Jaeger stored: ids and parents, names, kinds, status,
// timestamps, attributes, events and links. Jaeger may add attributes of
// its own; everything we sent must come back unchanged.
func compareTrace(want, got ptrace.Traces) []string {
	var diffs []string
	w, g := spansByID(want), spansByID(got)
	if len(w) != len(g) {
		diffs = append(diffs, fmt.Sprintf("%d spans, want %d", len(g), len(w)))
	}
	for id, ws := range w {
		gs, ok := g[id]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("span %s %q missing", id, ws.Name()))
			continue
		}
		d := func(field string, got, want any) {
			if fmt.Sprint(got) != fmt.Sprint(want) {
				diffs = append(diffs, fmt.Sprintf("span %s %q: %s = %v, want %v", id, ws.Name(), field, got, want))
			}
		}
		d("trace id", gs.TraceID(), ws.TraceID())
		d("parent", gs.ParentSpanID(), ws.ParentSpanID())
		d("name", gs.Name(), ws.Name())
		d("kind", gs.Kind(), ws.Kind())
		d("status", gs.Status().Code(), ws.Status().Code())
		d("status message", gs.Status().Message(), ws.Status().Message())
		d("start", gs.StartTimestamp(), ws.StartTimestamp())
		wantEnd := ws.EndTimestamp()
		if wantEnd == ws.StartTimestamp() {
			// Jaeger's negative-duration sanitizer stores a zero-length
			// span with an end 1ns after its start (and a warning).
			wantEnd++
		}
		d("end", gs.EndTimestamp(), wantEnd)
		for k, v := range ws.Attributes().All() {
			gv, ok := gs.Attributes().Get(k)
			if !ok {
				diffs = append(diffs, fmt.Sprintf("span %s %q: attribute %s missing", id, ws.Name(), k))
				continue
			}
			d("attribute "+k, gv.AsString(), v.AsString())
		}
		d("events", eventNames(gs), eventNames(ws))
		d("links", linkIDs(gs), linkIDs(ws))
	}
	return diffs
}

func eventNames(s ptrace.Span) string {
	var out []string
	for _, e := range s.Events().All() {
		out = append(out, fmt.Sprintf("%s@%d", e.Name(), e.Timestamp()))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func linkIDs(s ptrace.Span) string {
	var out []string
	for _, l := range s.Links().All() {
		out = append(out, l.TraceID().String()+"/"+l.SpanID().String())
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// outline renders a stored trace as an indented tree, children in start
// order: each span's name, ERROR when its status is, and the attributes that
// say what happened (end reason, call id, tool outcome, error type).
func outline(td ptrace.Traces) string {
	spans := spansByID(td)
	children := map[pcommon.SpanID][]ptrace.Span{}
	var roots []ptrace.Span
	for _, s := range spans {
		if _, ok := spans[s.ParentSpanID()]; ok {
			children[s.ParentSpanID()] = append(children[s.ParentSpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	order := func(ss []ptrace.Span) {
		sort.SliceStable(ss, func(i, j int) bool {
			if ss[i].StartTimestamp() != ss[j].StartTimestamp() {
				return ss[i].StartTimestamp() < ss[j].StartTimestamp()
			}
			return spanKey(ss[i]) < spanKey(ss[j])
		})
	}
	var b strings.Builder
	var walk func(s ptrace.Span, depth int)
	walk = func(s ptrace.Span, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(s.Name())
		if s.Status().Code() == ptrace.StatusCodeError {
			b.WriteString(" ERROR")
		}
		for _, k := range []string{"dsh.turn.end_reason", "dsh.turn.abort_cause", "error.type", "dsh.step", "gen_ai.tool.call.id", "dsh.tool.outcome"} {
			if v, ok := s.Attributes().Get(k); ok {
				fmt.Fprintf(&b, " %s=%s", k, v.AsString())
			}
		}
		b.WriteString("\n")
		kids := children[s.SpanID()]
		order(kids)
		for _, c := range kids {
			walk(c, depth+1)
		}
	}
	order(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// spanKey orders spans that start at the same time: by step, then name,
// then attempt (a step's model calls), then call id.
func spanKey(s ptrace.Span) string {
	key := func(k string) string {
		if v, ok := s.Attributes().Get(k); ok {
			return fmt.Sprintf("%08s", v.AsString())
		}
		return ""
	}
	return key("dsh.step") + "\x00" + s.Name() + "\x00" + key("dsh.attempt") + "\x00" + key("gen_ai.tool.call.id")
}
