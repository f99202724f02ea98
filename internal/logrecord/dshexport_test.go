package logrecord

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// dsh v4's export: event name session-log, the envelope as JSON text in
// attribute content; it gives the same spans as the file.
func TestDshV4Export(t *testing.T) {
	dir := testcorpus.Dir(t)
	for _, rel := range []string{"v4/snapshots/sdk/tool-error-details/session.v4.jsonl", "v4/snapshots/acp/cancel/session.v4.jsonl",
		"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl", "v4/snapshots/session/error-finish/writer.expected.jsonl"} {
		path := filepath.Join(dir, rel)
		session, envs := testlog.Envelopes(t, path)
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "dsh")
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		for _, env := range envs {
			b, _ := json.Marshal(env) // key order and bytes are not preserved, as dsh documents
			lr := lrs.AppendEmpty()
			lr.SetEventName("session-log")
			lr.Body().SetStr("session-log")
			lr.SetTimestamp(pcommon.Timestamp(int64(env["time"].(float64)) * int64(time.Millisecond)))
			lr.Attributes().PutStr("sessionId", session)
			lr.Attributes().PutStr("content", string(b))
			lr.Attributes().PutInt("event.seq", int64(env["seq"].(float64)))
			lr.Attributes().PutStr("event.type", env["type"].(string))
		}
		got := feed(t, ld)
		want := replay(t, path, session)
		if err := ptracetest.CompareTraces(want, got, ptracetest.IgnoreResourceSpansOrder()); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// dsh v0's export: body = data, event.* attributes, and only the first
// chunk of each step. Turns, steps, tools and committed model calls come
// out as from the file; the chunks' finer detail (retried attempts, time to
// first chunk of later deltas) is not in this feed.
func TestDshV0Export(t *testing.T) {
	dir := testcorpus.Dir(t)
	for _, rel := range []string{"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
		"v0/examples/acp-agent/tests/snapshots/code-mode-turn/session.jsonl", "v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl",
		// A fork: the export names its parent and seed length on every
		// record, so its inherited turns are the parent's, not its own.
		"v0/examples/acp-agent/tests/snapshots/subagent-fork-in-process/session.1.jsonl"} {
		path := filepath.Join(dir, rel)
		session, envs := testlog.Envelopes(t, path)
		hdr := headerOf(t, path)
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		firstChunk := map[[2]float64]bool{}
		for _, env := range envs {
			if env["type"] == "assistant/chunk" {
				d := env["data"].(map[string]any)
				k := [2]float64{d["turn"].(float64), d["step"].(float64)}
				if firstChunk[k] {
					continue
				}
				firstChunk[k] = true
			}
			lr := lrs.AppendEmpty()
			if err := lr.Body().SetEmptyMap().FromRaw(env["data"].(map[string]any)); err != nil {
				t.Fatal(err)
			}
			lr.SetTimestamp(pcommon.Timestamp(int64(env["time"].(float64)) * int64(time.Millisecond)))
			lr.Attributes().PutStr("session.id", session)
			lr.Attributes().PutStr("event.type", env["type"].(string))
			lr.Attributes().PutInt("event.seq", int64(env["seq"].(float64)))
			if hdr != nil && hdr.Cwd != "" {
				lr.Attributes().PutStr("session.cwd", hdr.Cwd)
			}
			if hdr != nil && hdr.HasSeedLength {
				lr.Attributes().PutStr("session.parent_id", hdr.ParentSession)
				lr.Attributes().PutInt("session.seed_length", hdr.SeedLength)
			}
		}
		got := feed(t, ld)
		want := replay(t, path, session)
		if g, w := shape(got), shape(want); g != w {
			t.Errorf("%s: span shape from the v0 export\n%s\nwant\n%s", rel, g, w)
		}
	}
}

// shape lists the spans' names and end reasons/outcomes, in order.
func shape(td ptrace.Traces) string {
	var out string
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		ss := rss.At(i).ScopeSpans().At(0).Spans()
		for j := 0; j < ss.Len(); j++ {
			s := ss.At(j)
			out += s.Name()
			for _, k := range []string{"dsh.turn.end_reason", "dsh.tool.outcome", "gen_ai.usage.output_tokens"} {
				if v, ok := s.Attributes().Get(k); ok {
					out += " " + k + "=" + v.AsString()
				}
			}
			out += "\n"
		}
	}
	return out
}

func TestReaderRejectsOtherRecords(t *testing.T) {
	rd := NewReader(0)
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	lr := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr("GET /index.html 200")
	if _, err := rd.Read(rl.Resource(), lr); !errors.Is(err, ErrNotSession) {
		t.Fatalf("an unrelated log record: got %v, want ErrNotSession", err)
	}
	lr.Attributes().PutStr("telemetry.op", "shutdown")
	lr.Attributes().PutStr("session.id", "x")
	if _, err := rd.Read(rl.Resource(), lr); !errors.Is(err, ErrNotSession) {
		t.Fatalf("a dsh ops record: got %v, want ErrNotSession", err)
	}
}
