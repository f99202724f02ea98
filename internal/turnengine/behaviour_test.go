package turnengine

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// loadInputs decodes a log into engine inputs.
func loadInputs(t *testing.T, r io.Reader, session string) []Input {
	t.Helper()
	var out []Input
	for _, row := range testlog.Read(t, r, session) {
		for i := range row.Events {
			out = append(out, Input{SessionID: session, Event: &row.Events[i], Format: row.Format, Header: row.Header})
		}
	}
	return out
}

func loadFile(t *testing.T, path, session string) []Input {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return loadInputs(t, f, session)
}

func run(cfg Config, inputs []Input) (*Engine, ptrace.Traces) {
	e := New(cfg)
	for _, in := range inputs {
		e.Ingest(in, epoch)
	}
	e.Flush(CauseEndOfInput, epoch)
	return e, Traces(e.Drain())
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
		_, want := run(Config{}, inputs)
		rng := rand.New(rand.NewPCG(1, uint64(len(inputs))))
		for trial := 0; trial < 20; trial++ {
			shuffled := shuffleWindows(rng, inputs, 1+rng.IntN(32))
			// Replays and re-deliveries: some events come twice.
			for i := 0; i < len(inputs)/5; i++ {
				shuffled = append(shuffled, inputs[rng.IntN(len(inputs))])
			}
			e := New(Config{})
			var turns []*Turn
			for i, in := range shuffled {
				e.Ingest(in, epoch)
				if i%7 == 0 {
					turns = append(turns, e.Drain()...) // emit in arbitrary batches
				}
			}
			e.Flush(CauseEndOfInput, epoch)
			turns = append(turns, e.Drain()...)
			got := Traces(turns)
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
func shuffleWindows(rng *rand.Rand, in []Input, n int) []Input {
	out := append([]Input(nil), in...)
	for i := 0; i < len(out); i += n {
		j := min(i+n, len(out))
		rng.Shuffle(j-i, func(a, b int) { out[i+a], out[i+b] = out[i+b], out[i+a] })
	}
	return out
}

// A turn silent for dangling_timeout (arrival clock) closes as dangling,
// once; its events arriving afterwards are late, not a second turn — its
// turn/end only adds the late close that tells how it ended (late.go).
func TestDanglingTimeoutAndLateEvents(t *testing.T) {
	inputs := loadInputs(t, strings.NewReader(testlog.Synth("s1", 2, 2, false)), "s1")
	cut := len(inputs) - 3 // hold back the last step/end... no: the last three events
	e := New(Config{DanglingTimeout: time.Minute})
	for _, in := range inputs[:cut] {
		e.Ingest(in, epoch)
	}
	if n := len(e.Drain()); n != 1 {
		t.Fatalf("%d turns closed before the timeout, want 1", n)
	}
	e.Sweep(epoch.Add(59 * time.Second))
	if n := len(e.Drain()); n != 0 {
		t.Fatalf("a turn closed before its timeout")
	}
	e.Sweep(epoch.Add(61 * time.Second))
	closed := e.Drain()
	if len(closed) != 1 || !closed[0].Dangling() || closed[0].DanglingCause != CauseTimeout {
		t.Fatalf("want turn 2 dangling by timeout, got %+v", closed)
	}
	if e.OpenTurns() != 0 {
		t.Fatalf("%d turns open", e.OpenTurns())
	}
	for _, in := range inputs[cut:] {
		e.Ingest(in, epoch.Add(2*time.Minute))
	}
	after := e.Drain()
	if len(after) != 1 || after[0].Late == nil || after[0].Number != closed[0].Number {
		t.Fatalf("after the late events: %+v, want only turn %d's late close", after, closed[0].Number)
	}
	// The closers (results, step/end) are kept on the late close and the
	// turn/end closes it; any other late event is counted late.
	if st := e.Stats(); st.Late != int64(3-1-len(after[0].Late.Closers)) || st.ClosedLate != 1 || st.Dangling[CauseTimeout] != 1 {
		t.Fatalf("stats %+v with %d closers: want the other late events, 1 closed late, 1 dangling by timeout", st, len(after[0].Late.Closers))
	}
	td := Traces(closed)
	root := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	if root.Status().Code() != ptrace.StatusCodeError {
		t.Fatal("a dangling turn's span has status ERROR")
	}
	if v, _ := root.Attributes().Get("dsh.turn.end_reason"); v.Str() != "dangling" {
		t.Fatalf("end_reason %q", v.Str())
	}
	if v, _ := root.Attributes().Get("dsh.dangling.cause"); v.Str() != CauseTimeout {
		t.Fatalf("dangling cause %q", v.Str())
	}
}

// At max_open_turns the oldest open turn is closed as dangling (evicted);
// at max_sessions the least recently active session is forgotten.
func TestEviction(t *testing.T) {
	e := New(Config{MaxOpenTurns: 3, MaxSessions: 5})
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("s%d", i)
		for _, in := range loadInputs(t, strings.NewReader(testlog.Synth(id, 1, 1, true)), id) {
			e.Ingest(in, epoch.Add(time.Duration(i)*time.Second))
		}
	}
	if e.OpenTurns() != 3 {
		t.Fatalf("%d open turns, bound is 3", e.OpenTurns())
	}
	if e.Sessions() != 5 {
		t.Fatalf("%d sessions, bound is 5", e.Sessions())
	}
	closed := e.Drain()
	if len(closed) != 3 {
		t.Fatalf("%d turns evicted, want 3", len(closed))
	}
	for i, tn := range closed {
		if tn.SessionID != fmt.Sprintf("s%d", i) || tn.DanglingCause != CauseEvicted {
			t.Fatalf("evicted %s (%s), want s%d evicted oldest first", tn.SessionID, tn.DanglingCause, i)
		}
	}
	e.Flush(CauseShutdown, epoch)
	rest := e.Drain()
	if len(rest) != 3 || rest[0].DanglingCause != CauseShutdown {
		t.Fatalf("shutdown closed %d turns", len(rest))
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
	_, td := run(Config{}, loadInputs(t, strings.NewReader(log), "c"))
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
	_, off := run(Config{}, loadFile(t, path, "s"))
	b, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(off)
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "AUTO_DENIED\\\""} {
		if strings.Contains(string(b), k) {
			t.Errorf("capture off, yet %q appears in the spans", k)
		}
	}
	_, on := run(Config{CaptureContent: true, MaxContentBytes: 300}, loadFile(t, path, "s"))
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

func TestTruncateJSON(t *testing.T) {
	long := strings.Repeat("é", 5000)
	docs := []string{
		`[{"role":"user","content":[{"type":"text","text":"` + long + `"}]}]`,
		`{"a":[` + strings.Repeat(`1,`, 3000) + `1]}`,
		`"` + long + `"`,
	}
	for _, d := range docs {
		for _, max := range []int{8, 64, 1000} {
			got := truncateJSON(d, max)
			if len(got) > max && max >= 16 || !json.Valid([]byte(got)) {
				t.Errorf("truncateJSON(%.20s…, %d) = %.60s (%d bytes)", d, max, got, len(got))
			}
		}
	}
}
