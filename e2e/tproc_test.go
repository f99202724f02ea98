//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
)

// dshExport builds the records dsh's own OTLP log export sends for the log
// at path, under session ids prefixed with prefix (corpus logs share
// ids): v4's (event name session-log, the envelope in attribute content)
// or v0's (body = data, event.* attributes, the first chunk of each step).
func dshExport(t *testing.T, path, prefix string, v4 bool) plog.Logs {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "dsh")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	firstChunk := map[string]bool{}
	for _, r := range testlog.Rows(t, path, "fallback") {
		session := prefix + r.Session
		for i := range r.Events {
			var env map[string]any
			if err := json.Unmarshal(r.Events[i].LogicalJSON(), &env); err != nil {
				t.Fatal(err)
			}
			data, _ := env["data"].(map[string]any)
			if !v4 && env["type"] == "assistant/chunk" {
				k := fmt.Sprint(session, "/", data["turn"], "/", data["step"])
				if firstChunk[k] {
					continue
				}
				firstChunk[k] = true
			}
			lr := lrs.AppendEmpty()
			lr.SetTimestamp(pcommon.Timestamp(int64(env["time"].(float64)) * int64(time.Millisecond)))
			lr.Attributes().PutInt("event.seq", int64(env["seq"].(float64)))
			lr.Attributes().PutStr("event.type", env["type"].(string))
			if v4 {
				b, _ := json.Marshal(env)
				lr.SetEventName("session-log")
				lr.Body().SetStr("session-log")
				lr.Attributes().PutStr("sessionId", session)
				lr.Attributes().PutStr("content", string(b))
				continue
			}
			if data != nil {
				if err := lr.Body().SetEmptyMap().FromRaw(data); err != nil {
					t.Fatal(err)
				}
			}
			lr.Attributes().PutStr("session.id", session)
		}
	}
	return ld
}

// postOTLP posts records as dsh does: OTLP/HTTP JSON, gzip.
func postOTLP(t *testing.T, url string, ld plog.Logs) {
	t.Helper()
	body, err := plogotlp.NewExportRequestFromLogs(ld).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(body)
	zw.Close()
	req, err := http.NewRequest(http.MethodPost, url, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d %s", url, resp.StatusCode, b)
	}
}

// chunk splits a batch's records into requests of at most n records.
func chunk(ld plog.Logs, n int) []plog.Logs {
	var out []plog.Logs
	src := ld.ResourceLogs().At(0)
	lrs := src.ScopeLogs().At(0).LogRecords()
	for i := 0; i < lrs.Len(); i += n {
		b := plog.NewLogs()
		rl := b.ResourceLogs().AppendEmpty()
		src.Resource().CopyTo(rl.Resource())
		dst := rl.ScopeLogs().AppendEmpty().LogRecords()
		for j := i; j < min(i+n, lrs.Len()); j++ {
			lrs.At(j).CopyTo(dst.AppendEmpty())
		}
		out = append(out, b)
	}
	return out
}

// TestStampedLogsNameTheSpans posts dsh's v4 and v0 OTLP log export of every
// sample dialect and corpus log to the otlp receiver of otelcol-dsh: the logs
// that leave the turn_state processor carry exactly the trace and span ids
// of the spans the turn_state connector emits for the same records, with
// their dsh.turn, dsh.step and gen_ai.tool.call.id, and other applications'
// records leave as they came.
func TestStampedLogsNameTheSpans(t *testing.T) {
	sink := startSink(t)
	c := newCollector(t, t.TempDir(), testConfig("stamp")).toSink(sink)
	col := c.start("otelcol")
	receiver := "http://" + c.addr("OTLP_HTTP_ENDPOINT") + "/v1/logs"

	var paths []string
	paths = append(paths, testcorpus.Testdata(t)...)
	corpus := testcorpus.Dir(t)
	for _, rel := range testcorpus.Files(t) {
		paths = append(paths, filepath.Join(corpus, rel))
	}
	posted := 0
	var first plog.Logs // the first request, posted again at the end
	for i, p := range paths {
		for _, v4 := range []bool{true, false} {
			prefix := fmt.Sprintf("v0-%d-", i)
			if v4 {
				prefix = fmt.Sprintf("v4-%d-", i)
			}
			for _, b := range chunk(dshExport(t, p, prefix, v4), 16) {
				if posted == 0 {
					first = b
				}
				postOTLP(t, receiver, b)
				posted += b.LogRecordCount()
			}
		}
	}
	// Another application's records through the same receiver.
	other := plog.NewLogs()
	orl := other.ResourceLogs().AppendEmpty()
	orl.Resource().Attributes().PutStr("service.name", "web")
	for i := 0; i < 3; i++ {
		lr := orl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.Body().SetStr(fmt.Sprintf("GET /page/%d 200", i))
		lr.Attributes().PutStr("http.route", "/page")
		lr.Attributes().PutInt("event.seq", int64(i)) // no session: not dsh's
	}
	postOTLP(t, receiver, other)
	posted += 3
	// A redelivery passes unstamped, counted as duplicates.
	postOTLP(t, receiver, first)
	posted += first.LogRecordCount()

	poll(t, "every record through the processor", 60*time.Second, func() error {
		if n := sink.recordCount(); n != posted {
			return fmt.Errorf("%d of %d records", n, posted)
		}
		return nil
	}, col)
	self := c.selfURL()
	stamped, err := metricSum(context.Background(), self, "otelcol_processor_turn_state_records_stamped")
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "the redelivery counted as duplicates", 10*time.Second,
		counterEquals(context.Background(), self, "otelcol_processor_turn_state_records_duplicate", float64(first.LogRecordCount())), col)
	poll(t, "the other records counted as passed", 10*time.Second,
		counterEquals(context.Background(), self, "otelcol_processor_turn_state_records_passed", 3), col)
	// Stopping flushes the turns still open (dangling) to the trace sink.
	if err := col.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	spans := map[[24]byte]ptrace.Span{}
	for _, rs := range sink.receivedTraces().ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				spans[key(sp.TraceID(), sp.SpanID())] = sp
			}
		}
	}
	if len(spans) == 0 {
		t.Fatal("the connector emitted no spans")
	}
	named := map[[24]byte]bool{}
	n, bad := 0, 0
	for _, rl := range sink.receivedLogs().ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if v, ok := rl.Resource().Attributes().Get("service.name"); ok && v.Str() == "web" {
					if !lr.TraceID().IsEmpty() || lr.Attributes().Len() != 2 {
						t.Errorf("another application's record was changed: %v", lr.Attributes().AsRaw())
					}
					continue
				}
				if lr.SpanID().IsEmpty() {
					continue
				}
				n++
				k := key(lr.TraceID(), lr.SpanID())
				sp, ok := spans[k]
				if !ok {
					if bad++; bad <= 20 {
						t.Errorf("%v: stamped %s/%s, no span the connector emitted", lr.Attributes().AsRaw()["event.type"], lr.TraceID(), lr.SpanID())
					}
					continue
				}
				named[k] = true
				for _, a := range []string{"dsh.turn", "dsh.step", "gen_ai.tool.call.id"} {
					want, wok := sp.Attributes().Get(a)
					got, gok := lr.Attributes().Get(a)
					if wok != gok || wok && want.AsString() != got.AsString() {
						t.Errorf("record %v on span %q: %s = %v, the span's %v", lr.Attributes().AsRaw()["event.seq"], sp.Name(), a, got.AsRaw(), want.AsRaw())
					}
				}
			}
		}
	}
	for k, sp := range spans {
		if !named[k] {
			t.Errorf("span %q %s is named by no record", sp.Name(), sp.SpanID())
		}
	}
	if float64(n) != stamped {
		t.Errorf("%d records stamped, otelcol_processor_turn_state_records_stamped = %v", n, stamped)
	}
	t.Logf("%d records posted, %d stamped, %d spans", posted, n, len(spans))
}

func key(tr pcommon.TraceID, sp pcommon.SpanID) [24]byte {
	var k [24]byte
	copy(k[:16], tr[:])
	copy(k[16:], sp[:])
	return k
}
