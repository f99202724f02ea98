package turnrender

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

func spansByName(td ptrace.Traces) map[string][]ptrace.Span {
	out := map[string][]ptrace.Span{}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				name := ss.At(k).Name()
				if i := strings.IndexByte(name, ' '); i > 0 {
					name = name[:i]
				}
				out[name] = append(out[name], ss.At(k))
			}
		}
	}
	return out
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-15 }

// The cost of a corpus turn, worked out by hand from the built-in price of
// deepseek-v4-flash on the turn's date (2026-08-04, after the cache-hit
// cut: $0.14 uncached input, $0.0028 cache read, $0.28 output per 1M):
//
//	step 1: 123×0.14 + 1664×0.0028 + 89×0.28 = 17.22 + 4.6592 + 24.92 = 46.7992 µ$
//	step 2: 233×0.14 + 1664×0.0028 + 24×0.28 = 32.62 + 4.6592 + 6.72  = 43.9992 µ$
//	turn:   90.7984 µ$
func TestCostOfCorpusTurn(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), "v0/examples/jsonrpc-agent/tests/snapshots/bash-tool/session.jsonl")
	_, m, td := run(turnengine.Config{}, loadFile(t, path, "s"))
	spans := spansByName(td)
	chats := spans["chat"]
	if len(chats) != 2 {
		t.Fatalf("%d chat spans, want 2", len(chats))
	}
	for i, want := range []float64{46.7992e-6, 43.9992e-6} {
		v, ok := chats[i].Attributes().Get("dsh.usage.cost")
		if !ok || !closeTo(v.Double(), want) {
			t.Errorf("chat %d dsh.usage.cost = %v (%v), want %v", i+1, v.AsRaw(), ok, want)
		}
		in, _ := chats[i].Attributes().Get("gen_ai.usage.input_tokens")
		cr, _ := chats[i].Attributes().Get("gen_ai.usage.cache_read.input_tokens")
		if in.Int() != []int64{123 + 1664, 233 + 1664}[i] || cr.Int() != 1664 {
			t.Errorf("chat %d input_tokens %d cache_read %d: input must include the cached tokens", i+1, in.Int(), cr.Int())
		}
	}
	root := spans["invoke_agent"][0].Attributes()
	if v, ok := root.Get("dsh.turn.cost"); !ok || !closeTo(v.Double(), 90.7984e-6) {
		t.Errorf("dsh.turn.cost = %v, want 90.7984e-6", v.AsRaw())
	}
	for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
		if _, ok := root.Get(k); ok {
			t.Errorf("the agent span carries %s; turn totals are dsh.turn.usage.*", k)
		}
	}
	if v, _ := root.Get("dsh.turn.usage.input_tokens"); v.Int() != 123+233+2*1664 {
		t.Errorf("dsh.turn.usage.input_tokens = %d", v.Int())
	}
	// The dsh.usage.cost counter adds up to the same total, by token type.
	byType := map[string]float64{}
	points(m, MetricUsageCost, func(attrs pcommon.Map, v float64) {
		typ, _ := attrs.Get("gen_ai.token.type")
		byType[typ.Str()] += v
	})
	want := map[string]float64{TokenUncachedInput: 49.84e-6, TokenCacheRead: 9.3184e-6, TokenOutput: 31.64e-6}
	for k, w := range want {
		if !closeTo(byType[k], w) {
			t.Errorf("dsh.usage.cost{%s} = %v, want %v", k, byType[k], w)
		}
	}
	if len(byType) != len(want) {
		t.Errorf("cost types %v, want %v", byType, want)
	}
}

// points calls f with every data point of a double counter.
func points(m *Metrics, name string, f func(pcommon.Map, float64)) {
	for _, p := range m.series[name] {
		m := pcommon.NewMap()
		putKVs(m, p.attrs)
		f(m, p.fvalue)
	}
}

// A model the price table does not know gets no cost anywhere, and the
// root counts the calls left unpriced; a table given instead of the
// built-in one prices by it.
func TestUnpricedModel(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), "v0/examples/jsonrpc-agent/tests/snapshots/bash-tool/session.jsonl")
	in := loadFile(t, path, "s")
	none, err := pricing.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, m := newEngine(turnengine.Config{Prices: none})
	for _, x := range in {
		e.Ingest(x, epoch)
	}
	e.Flush(turnengine.CauseEndOfInput, epoch)
	spans := spansByName(Traces(testScope, e.Drain()))
	for _, s := range spans["chat"] {
		if _, ok := s.Attributes().Get("dsh.usage.cost"); ok {
			t.Error("a chat span without a price has a cost")
		}
	}
	root := spans["invoke_agent"][0].Attributes()
	if _, ok := root.Get("dsh.turn.cost"); ok {
		t.Error("a turn without prices has a cost")
	}
	if v, _ := root.Get("dsh.turn.cost.unpriced_calls"); v.Int() != 2 {
		t.Errorf("unpriced calls = %d, want 2", v.Int())
	}
	if len(m.series[MetricUsageCost]) != 0 {
		t.Error("dsh.usage.cost counted without prices")
	}

	tb, err := pricing.New([]pricing.Entry{{Provider: "deepseek-official", Model: "deepseek-v4-flash", Price: pricing.Price{Input: 1, CacheRead: 1, Output: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	e, _ = newEngine(turnengine.Config{Prices: tb})
	for _, x := range in {
		e.Ingest(x, epoch)
	}
	e.Flush(turnengine.CauseEndOfInput, epoch)
	root = spansByName(Traces(testScope, e.Drain()))["invoke_agent"][0].Attributes()
	// $1 per 1M tokens of every type: (123+1664+89 + 233+1664+24)/1e6.
	if v, _ := root.Get("dsh.turn.cost"); !closeTo(v.Double(), 3797e-6) {
		t.Errorf("dsh.turn.cost = %v, want 0.003797", v.AsRaw())
	}
}

// Captured content follows the conventions' JSON shapes: system
// instructions a list of parts, input messages a list of {role, parts},
// output messages {role, parts} (the finish reason is
// gen_ai.response.finish_reasons); every part has a type.
func TestContentShapes(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), "v4/snapshots/sdk/tool-error-details/session.v4.jsonl")
	_, _, td := run(turnengine.Config{CaptureContent: true}, loadFile(t, path, "s"))
	checkParts := func(what string, parts []any) {
		if len(parts) == 0 {
			t.Errorf("%s: no parts", what)
		}
		for _, p := range parts {
			m, ok := p.(map[string]any)
			if !ok || m["type"] == nil || m["type"] == "" {
				t.Errorf("%s: part without a type: %v", what, p)
			}
			if m["type"] == "text" {
				if _, ok := m["content"].(string); !ok {
					t.Errorf("%s: text part without content: %v", what, p)
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range spansByName(td)["chat"] {
		a := s.Attributes()
		if v, ok := a.Get("gen_ai.system_instructions"); ok {
			seen["system"] = true
			var parts []any
			if err := json.Unmarshal([]byte(v.Str()), &parts); err != nil {
				t.Fatalf("system instructions: %v", err)
			}
			checkParts("system instructions", parts)
		}
		for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages"} {
			v, ok := a.Get(k)
			if !ok {
				continue
			}
			seen[k] = true
			var msgs []map[string]any
			if err := json.Unmarshal([]byte(v.Str()), &msgs); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			for _, m := range msgs {
				if m["role"] == "" || m["role"] == nil {
					t.Errorf("%s: message without a role", k)
				}
				if m["role"] == "system" {
					t.Errorf("%s: a system message belongs in gen_ai.system_instructions", k)
				}
				parts, _ := m["parts"].([]any)
				checkParts(k, parts)
				if k == "gen_ai.output.messages" && m["role"] != "assistant" {
					t.Errorf("output message of role %v", m["role"])
				}
			}
		}
	}
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages"} {
		if !seen[k] {
			t.Errorf("no chat span carries %s", k)
		}
	}
}

// Finish reasons in the conventions' values; a generation that ended
// abnormally — failed, cancelled, or with no finish and no message —
// reports "error".
func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		committed bool
		want      string
	}{
		{"", false, "error"}, {"", true, ""}, {"stop", true, "stop"}, {"tool-calls", true, "tool_call"},
		{"max-tokens", true, "length"}, {"error", false, "error"}, {"aborted", false, "error"}, {"aborted", true, "error"},
		{"some-new-kind", true, "some-new-kind"},
	} {
		if got := finishReason(&turnengine.Attempt{FinishKind: tc.kind, Committed: tc.committed}); got != tc.want {
			t.Errorf("finish %q committed %v: %q, want %q", tc.kind, tc.committed, got, tc.want)
		}
	}
}

// A model call that reported no usage shows as absent everywhere: no
// usage attributes on its chat span nor totals on the turn span, nothing
// counted in dsh.usage.tokens or dsh.usage.cost — not zeros.
func TestMissingUsageIsAbsent(t *testing.T) {
	log := `{"type":"session","version":4,"id":"c","createdAt":1,"isSeeded":false,"delegationDepth":0}
{"type":"turn/start","seq":0,"time":1000,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":1000,"data":{"turn":1,"step":1}}
{"type":"assistant/message","seq":2,"time":2000,"data":{"turn":1,"step":1,"message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}],"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}},"stream":[]},"surfaceOp":"append"}
{"type":"step/end","seq":3,"time":2000,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":4,"time":2000,"data":{"turn":1,"reason":{"kind":"completed"}}}
`
	_, m, td := run(turnengine.Config{}, loadInputs(t, strings.NewReader(log), "c"))
	spans := spansByName(td)
	if len(spans["chat"]) != 1 {
		t.Fatalf("%d chat spans", len(spans["chat"]))
	}
	for _, s := range append(spans["chat"], spans["invoke_agent"]...) {
		s.Attributes().Range(func(k string, _ pcommon.Value) bool {
			if strings.Contains(k, "usage") || strings.Contains(k, "cost") {
				t.Errorf("span %s has %s without any usage reported", s.Name(), k)
			}
			return true
		})
	}
	for _, name := range []string{MetricUsageTokens, MetricUsageCost} {
		if n := len(m.series[name]); n != 0 {
			t.Errorf("%s has %d series without any usage reported", name, n)
		}
	}
}

// gen_ai.invocation.is_nested on a turn's root: true for a subagent child
// (its header's delegationDepth ≥ 1), false for a top-level session and
// for one read without its header.
func TestInvocationIsNested(t *testing.T) {
	root, err := testcorpus.Root()
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(root, "testdata", "dialects", "v1-header.jsonl") // delegationDepth 1
	b, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 2)
	top := strings.Replace(lines[0], `"delegationDepth":1`, `"delegationDepth":0`, 1)
	if top == lines[0] {
		t.Fatal("the child log's header no longer says delegationDepth 1")
	}
	for _, c := range []struct {
		name, log string
		want      bool
	}{
		{"subagent child", string(b), true},
		{"top-level", top + "\n" + lines[1], false},
		{"no header", lines[1], false},
	} {
		_, _, td := run(turnengine.Config{}, loadInputs(t, strings.NewReader(c.log), "s"))
		var n int
		for _, sp := range spansByName(td)["invoke_agent"] { // the turns' roots
			v, ok := sp.Attributes().Get("gen_ai.invocation.is_nested")
			if !ok || v.Bool() != c.want {
				t.Errorf("%s: %s: is_nested %v (set %v), want %v", c.name, sp.Name(), v.AsRaw(), ok, c.want)
			}
			n++
		}
		if n == 0 {
			t.Fatalf("%s: no turn span", c.name)
		}
	}
}
