package turnrender

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// checkTree asserts the structural rules every emitted trace keeps: one
// trace per turn, a single root, every parent present, unique span ids,
// no negative duration, children within their parents.
func checkTree(t *testing.T, name string, td ptrace.Traces) {
	t.Helper()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		spans := rss.At(i).ScopeSpans().At(0).Spans()
		byID := map[pcommon.SpanID]ptrace.Span{}
		roots := map[pcommon.TraceID]int{}
		for j := 0; j < spans.Len(); j++ {
			s := spans.At(j)
			if _, dup := byID[s.SpanID()]; dup {
				t.Errorf("%s: duplicate span id %s (%s)", name, s.SpanID(), s.Name())
			}
			byID[s.SpanID()] = s
			if s.ParentSpanID().IsEmpty() {
				roots[s.TraceID()]++
			}
			if s.EndTimestamp() < s.StartTimestamp() {
				t.Errorf("%s: span %s ends before it starts", name, s.Name())
			}
		}
		for tr, n := range roots {
			if n != 1 {
				t.Errorf("%s: trace %s has %d roots", name, tr, n)
			}
		}
		for _, s := range byID {
			if s.ParentSpanID().IsEmpty() {
				continue
			}
			p, ok := byID[s.ParentSpanID()]
			if !ok {
				t.Errorf("%s: span %s has no parent in its trace", name, s.Name())
				continue
			}
			if p.TraceID() != s.TraceID() {
				t.Errorf("%s: span %s crosses traces", name, s.Name())
			}
			if s.StartTimestamp() < p.StartTimestamp() || s.EndTimestamp() > p.EndTimestamp() {
				t.Errorf("%s: span %s lies outside its parent %s", name, s.Name(), p.Name())
			}
		}
	}
}

// Every log — the repository's own and the corpus's — renders as
// well-formed traces (checkTree).
func TestCorpusTraceTrees(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		_, _, turns := replayFile(t, l.Path, turnengine.Config{})
		checkTree(t, l.Name, Traces(testScope, turns))
	}
}

// A turn's events may arrive in any batching and order within the reorder
// window, and any number of times: the spans are the same, ids included.
func TestDeterministicUnderRebatching(t *testing.T) {
	files := []string{
		"../../testdata/dialects/v4-tools.jsonl",
		"../../testdata/dialects/v4-end-reasons.jsonl",
		"../../testdata/dialects/v0-end-reasons.jsonl",
		"../../testdata/dialects/wrap-streamjson.jsonl",
		"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl",
		"v0/examples/acp-agent/tests/snapshots/code-mode-turn/session.jsonl",
		"v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
		"wire/v0/examples/headless-agent/tests/snapshots/provider-retry/stream-json.expected.jsonl",
	}
	for _, rel := range files {
		path := rel
		if !strings.HasPrefix(rel, "../") {
			if !testcorpus.Available() {
				continue // a corpus file, and no corpus: our own logs still run
			}
			path = testcorpus.Path(t, rel)
		}
		inputs := loadFile(t, path, "s")
		_, _, want := run(turnengine.Config{}, inputs)
		rng := rand.New(rand.NewPCG(1, uint64(len(inputs))))
		for trial := 0; trial < 20; trial++ {
			shuffled := shuffleWindows(rng, inputs, 1+rng.IntN(32))
			// Replays and re-deliveries: some events come twice.
			for i := 0; i < len(inputs)/5; i++ {
				shuffled = append(shuffled, inputs[rng.IntN(len(inputs))])
			}
			e := turnengine.New(turnengine.Config{})
			var turns []*turnengine.Turn
			for i, in := range shuffled {
				e.Ingest(in, epoch)
				if i%7 == 0 {
					turns = append(turns, e.Drain()...) // emit in arbitrary batches
				}
			}
			e.Flush(turnengine.CauseEndOfInput, epoch)
			turns = append(turns, e.Drain()...)
			got := Traces(testScope, turns)
			if err := ptracetest.CompareTraces(want, got, ptracetest.IgnoreResourceSpansOrder()); err != nil {
				t.Fatalf("%s trial %d: %v", rel, trial, err)
			}
			if e.Stats().Duplicates < int64(len(inputs)/5) {
				t.Fatalf("%s: %d duplicates counted, at least %d fed", rel, e.Stats().Duplicates, len(inputs)/5)
			}
		}
	}
}

// shuffleWindows reverses or shuffles consecutive windows of n events.
func shuffleWindows(rng *rand.Rand, in []turnengine.Input, n int) []turnengine.Input {
	out := append([]turnengine.Input(nil), in...)
	for i := 0; i < len(out); i += n {
		j := min(i+n, len(out))
		rng.Shuffle(j-i, func(a, b int) { out[i+a], out[i+b] = out[i+b], out[i+a] })
	}
	return out
}

// A turn closed as dangling renders as a root of status ERROR, end
// reason dangling, with its cause.
func TestDanglingTurnSpan(t *testing.T) {
	inputs := loadInputs(t, strings.NewReader(testlog.Synth("s1", 2, 2, false)), "s1")
	cut := len(inputs) - 3 // the last three events never come
	e := turnengine.New(turnengine.Config{DanglingTimeout: time.Minute})
	for _, in := range inputs[:cut] {
		e.Ingest(in, epoch)
	}
	e.Drain()
	e.Sweep(epoch.Add(61 * time.Second))
	closed := e.Drain()
	if len(closed) != 1 || !closed[0].Dangling() {
		t.Fatalf("want turn 2 dangling by timeout, got %+v", closed)
	}
	td := Traces(testScope, closed)
	root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if root.Status().Code() != ptrace.StatusCodeError {
		t.Fatal("a dangling turn's span has status ERROR")
	}
	if v, _ := root.Attributes().Get("dsh.turn.end_reason"); v.Str() != "dangling" {
		t.Fatalf("end_reason %q", v.Str())
	}
	if v, _ := root.Attributes().Get("dsh.dangling.cause"); v.Str() != turnengine.CauseTimeout {
		t.Fatalf("dangling cause %q", v.Str())
	}
}

// Times that go backwards never give a negative duration: they are clamped
// into the parent's bounds and flagged.
func TestTimeClamped(t *testing.T) {
	log := `{"type":"session","version":4,"id":"c","createdAt":1,"isSeeded":false,"delegationDepth":0}
{"type":"turn/start","seq":0,"time":1000,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":900,"data":{"turn":1,"step":1}}
{"type":"assistant/message","seq":2,"time":5000,"data":{"turn":1,"step":1,"message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}],"source":{"kind":"model","provider":"p","model":"m"}},"stream":[]},"surfaceOp":"append"}
{"type":"step/end","seq":3,"time":1500,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":4,"time":800,"data":{"turn":1,"reason":{"kind":"completed"}}}
`
	_, _, td := run(turnengine.Config{}, loadInputs(t, strings.NewReader(log), "c"))
	checkTree(t, "clamp", td)
	spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	for i := 0; i < spans.Len(); i++ {
		if v, ok := spans.At(i).Attributes().Get("dsh.time.clamped"); !ok || !v.Bool() {
			t.Errorf("span %s not flagged dsh.time.clamped", spans.At(i).Name())
		}
	}
}

// With capture on, chat spans carry the history the model saw and tool
// spans their payloads, each truncated to valid JSON within the limit; with
// capture off (the default) no content appears anywhere.
func TestContentCapture(t *testing.T) {
	dir := testcorpus.Dir(t)
	path := filepath.Join(dir, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl")
	_, _, off := run(turnengine.Config{}, loadFile(t, path, "s"))
	b, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(off)
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "AUTO_DENIED\\\""} {
		if strings.Contains(string(b), k) {
			t.Errorf("capture off, yet %q appears in the spans", k)
		}
	}
	_, _, on := run(turnengine.Config{CaptureContent: true, MaxContentBytes: 300}, loadFile(t, path, "s"))
	spans := on.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	seen := map[string]bool{}
	for i := 0; i < spans.Len(); i++ {
		spans.At(i).Attributes().Range(func(k string, v pcommon.Value) bool {
			if strings.HasPrefix(k, "gen_ai.input") || strings.HasPrefix(k, "gen_ai.output") || strings.HasPrefix(k, "gen_ai.tool.call.") && k != "gen_ai.tool.call.id" {
				seen[k] = true
				if len(v.Str()) > 300 {
					t.Errorf("%s is %d bytes, limit 300", k, len(v.Str()))
				}
				if k != "gen_ai.tool.call.arguments" && !json.Valid([]byte(v.Str())) {
					t.Errorf("%s is not valid JSON: %s", k, v.Str())
				}
			}
			return true
		})
	}
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		if !seen[k] {
			t.Errorf("capture on, but no span carries %s", k)
		}
	}
}

// TestTurnsOwnTheirStrings: what the engine keeps of an event past it —
// open and closed turns, with content capture on — is its own, not a view
// into the event's row. A kept view would hold the row's memory (for the
// file transport, the whole chunk the row was read into) until the turn is
// emitted. The rows are overwritten once every event is in, before the
// engine flushes and the turns are rendered: the traces must be those of
// rows left alone.
func TestTurnsOwnTheirStrings(t *testing.T) {
	cfg := turnengine.Config{CaptureContent: true}
	for _, name := range []string{"v4-tools.jsonl", "v2-stream.jsonl", "v0-packed.jsonl", "open-turn.jsonl", "v4-end-reasons.jsonl"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "testdata", "dialects", name)
			_, _, want := run(cfg, loadFile(t, path, "s"))
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			rows := testlog.Read(t, f, "s")
			e, _ := newEngine(cfg)
			for _, row := range rows {
				for i := range row.Events {
					e.Ingest(turnengine.Input{SessionID: "s", Event: &row.Events[i], Format: row.Format, Header: row.Header}, epoch)
				}
			}
			for _, row := range rows {
				for i := range row.Bytes {
					row.Bytes[i] = 'x'
				}
			}
			e.Flush(turnengine.CauseEndOfInput, epoch)
			got := Traces(testScope, e.Drain())
			require.Positive(t, got.SpanCount())
			require.NoError(t, ptracetest.CompareTraces(want, got, ptracetest.IgnoreSpansOrder()))
		})
	}
}
