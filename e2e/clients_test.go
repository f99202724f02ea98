//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// TestSharingACollector: two agents, alice and bob, each with credentials
// of their own (basicauth, which names its clients), post to one collector
// under the same session ids — alice's real rows, bob's forged ones — in
// both orders, over the session_event receiver and as dsh's own OTLP
// export. It judges that a session belongs to the client that writes it:
// every post of alice's is accepted whole (none of her rows swallowed as a
// duplicate of bob's), each client's turn reaches the trace backend
// complete and exactly as the engine computes it from that client's rows,
// in a trace of its own (derived from the client and the session) whose
// resource names the client, and every record the processor stamps names
// its client.
func TestSharingACollector(t *testing.T) {
	file := filepath.Join("..", "testdata", "dialects", "v4-tools.jsonl")
	real, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.ReplaceAll(real, []byte("a.txt"), []byte("b.txt"))
	dir := t.TempDir()
	htpasswd := agentsHtpasswd(t, dir)
	sink := startSink(t)
	col := newCollector(t, dir, testConfig("clients")).toSink(sink).set("AGENTS_HTPASSWD_FILE", htpasswd)
	p := col.start("otelcol-dsh-clients")
	// Over HTTP: the three posts, alice first under shared-1, bob first
	// under shared-2.
	threePosts(t, col.ingestURL(), real, forged)
	rows := bytes.SplitAfter(bytes.TrimRight(real, "\n"), []byte("\n"))
	// As dsh's own OTLP export, under shared-3.
	for _, who := range []string{"bob", "alice"} {
		body := real
		if who == "bob" {
			body = forged
		}
		code, got := postAs(t, "http://"+col.addr("OTLP_HTTP_ENDPOINT")+"/v1/logs", auth(who), "application/json",
			otlpJSON(t, v4Export(t, body, "shared-3")), true)
		if code != http.StatusOK {
			t.Errorf("shared-3: %s's export: HTTP %d %s", who, code, got)
		}
	}

	// What each client's turn must be: the engine's, on that client's rows
	// — alice's whole log under every id, and bob's whole forged log under
	// shared-3 (over HTTP he posted only its seq 5–24, which hold no
	// turn/start: no turn of his there, and none of it in alice's).
	var want []*turnengine.Turn
	for _, session := range []string{"shared-1", "shared-2", "shared-3"} {
		want = append(want, turnOf(t, clientid.Key("alice", session), real))
	}
	want = append(want, turnOf(t, clientid.Key("bob", "shared-3"), forged))
	var problems []string
	poll(t, "each client's turn in the sink, complete", 30*time.Second, func() error {
		problems = problems[:0]
		got := sink.receivedTraces()
		for _, turn := range want {
			client, session := clientid.Split(turn.SessionID)
			td := traceWithID(got, turnrender.TraceID(turn.SessionID, turn.Number))
			if td.SpanCount() == 0 {
				problems = append(problems, fmt.Sprintf("%s's %s: no trace", client, session))
				continue
			}
			if diffs := compareTrace(traceOf(turn), td); len(diffs) > 0 {
				problems = append(problems, fmt.Sprintf("%s's %s: %s", client, session, strings.Join(diffs, "; ")))
			}
			res := td.ResourceSpans().At(0).Resource().Attributes()
			if v, _ := res.Get("enduser.id"); v.Str() != client {
				problems = append(problems, fmt.Sprintf("%s's %s: resource enduser.id %q", client, session, v.Str()))
			}
			if v, _ := res.Get("session.id"); v.Str() != session {
				problems = append(problems, fmt.Sprintf("%s's %s: resource session.id %q", client, session, v.Str()))
			}
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "\n"))
		}
		return nil
	}, p)
	if n := got(sink.receivedTraces()); n != len(want) {
		t.Errorf("%d turn traces, want %d: alice's three and bob's exported one", n, len(want))
	}

	// Every record delivered names its client: none lost, none anonymous.
	counts := map[string]int{}
	lds := sink.receivedLogs()
	for i := 0; i < lds.ResourceLogs().Len(); i++ {
		rl := lds.ResourceLogs().At(i)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				who, ok := lrs.At(k).Attributes().Get("enduser.id")
				if !ok {
					who, ok = rl.Resource().Attributes().Get("enduser.id")
				}
				if !ok {
					counts[""]++
					continue
				}
				counts[who.Str()]++
			}
		}
	}
	events := len(rows) - 1
	// HTTP: alice 2×26 rows, bob 2×21; OTLP: 25 events each.
	if counts["alice"] != 2*(events+1)+events || counts["bob"] != 2*21+events || counts[""] != 0 {
		t.Errorf("records by client %v, want alice %d, bob %d, none without", counts, 2*(events+1)+events, 2*21+events)
	}
}

// agentsHtpasswd writes an htpasswd file of alice and bob, each with the
// token <name>-token.
func agentsHtpasswd(t *testing.T, dir string) string {
	t.Helper()
	htpasswd := filepath.Join(dir, "agents.htpasswd")
	var lines []string
	for _, u := range []string{"alice", "bob"} {
		sum := sha1.Sum([]byte(u + "-token"))
		lines = append(lines, u+":{SHA}"+base64.StdEncoding.EncodeToString(sum[:]))
	}
	if err := os.WriteFile(htpasswd, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return htpasswd
}

// auth is a client's Authorization header (agentsHtpasswd's tokens).
func auth(who string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(who+":"+who+"-token"))
}

// threePosts makes the three posts of a shared session id at an ingest
// URL, alice first under shared-1 and bob first under shared-2: alice's
// header and seq 0–4, bob's forged header and seq 5–24, alice's seq 5–24.
// Each must be accepted whole.
func threePosts(t *testing.T, ingest string, real, forged []byte) {
	t.Helper()
	rows := bytes.SplitAfter(bytes.TrimRight(real, "\n"), []byte("\n"))
	frows := bytes.SplitAfter(bytes.TrimRight(forged, "\n"), []byte("\n"))
	aliceFirst := bytes.Join(rows[:6], nil) // the header and seq 0–4
	aliceRest := bytes.Join(rows[6:], nil)  // seq 5–24
	bobForged := append(append([]byte{}, frows[0]...), bytes.Join(frows[6:], nil)...)
	for _, c := range []struct {
		session string
		posts   []clientPost
	}{
		{"shared-1", []clientPost{{"alice", aliceFirst, 6}, {"bob", bobForged, 21}, {"alice", aliceRest, 20}}},
		{"shared-2", []clientPost{{"bob", bobForged, 21}, {"alice", aliceFirst, 6}, {"alice", aliceRest, 20}}},
	} {
		for _, ps := range c.posts {
			code, got := postAs(t, ingest+"/v1/sessions/"+c.session+"/events", auth(ps.who), "application/x-ndjson", ps.body, false)
			want := fmt.Sprintf(`{"accepted":%d,"duplicates":0}`, ps.accepted)
			if code != http.StatusAccepted || strings.TrimSpace(got) != want {
				t.Errorf("%s: %s's post: HTTP %d %s, want 202 %s", c.session, ps.who, code, got, want)
			}
		}
	}
}

// TestSharingAKafkaDeployment: the same three posts through the two-tier
// Kafka deployment as shipped, its ingest listener naming its clients:
// the ingest tier keys each client's session apart, and alice's turns
// reach Jaeger complete and unchanged from the turn-state tier, in traces
// of their own that name her, whichever node built them.
func TestSharingAKafkaDeployment(t *testing.T) {
	kfakeBin := lookPath(t, "KFAKE", toolsHint)
	file := filepath.Join("..", "testdata", "dialects", "v4-tools.jsonl")
	real, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.ReplaceAll(real, []byte("a.txt"), []byte("b.txt"))
	ctx := context.Background()
	dir := t.TempDir()
	broker := freeAddr(t)
	kfake := start(t, dir, "kfake", kfakeBin, nil, "-port="+addrPort(broker), "-partitions="+strconv.Itoa(kafkaPartitions))
	j := newJaegerPorts(t)
	jaeger := startJaeger(t, dir, "jaeger", j)
	procs := []*process{kfake, jaeger}
	var nodes []*collector
	for _, node := range []string{"node-a", "node-b"} {
		c := newCollector(t, dir, shippedConfig("kafka-turn-state")).toJaeger(j).
			set("HOSTNAME", node).set("KAFKA_BROKERS", broker).set("STATE_DIR", filepath.Join(dir, "state-"+node))
		procs = append(procs, c.start("turn-state-"+node, procs...))
		nodes = append(nodes, c)
	}
	awaitPartitions(t, ctx, nodes, procs...)
	in := newCollector(t, dir, shippedConfig("kafka-ingest"), testConfig("kafka-ingest-clients")).
		set("KAFKA_BROKERS", broker).set("KAFKA_PARTITIONS", strconv.Itoa(kafkaPartitions)).set("STATE_DIR", filepath.Join(dir, "ingest-state")).
		set("AGENTS_HTPASSWD_FILE", agentsHtpasswd(t, dir))
	procs = append(procs, in.start("ingest", procs...))

	threePosts(t, in.ingestURL(), real, forged)
	for _, session := range []string{"shared-1", "shared-2"} {
		turn := turnOf(t, clientid.Key("alice", session), real)
		_, got, diffs := builtTurn(t, ctx, j.query(), turn, procs...)
		if who, _ := got.ResourceSpans().At(0).Resource().Attributes().Get("enduser.id"); who.Str() != "alice" {
			diffs = append(diffs, fmt.Sprintf("resource enduser.id %q", who.Str()))
		}
		for _, d := range diffs {
			t.Errorf("alice's %s: %s", session, d)
		}
	}
}

// clientPost is one client's post and how many rows it must have accepted.
type clientPost struct {
	who      string
	body     []byte
	accepted int
}

// postAs posts body with an Authorization header, gzipped if asked.
func postAs(t *testing.T, url, authorization, contentType string, body []byte, gz bool) (int, string) {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	if gz {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		r = &buf
	}
	req, err := http.NewRequest(http.MethodPost, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", authorization)
	if gz {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// v4Export is dsh v4's own OTLP log export of a log's events under session.
func v4Export(t *testing.T, body []byte, session string) plog.Logs {
	t.Helper()
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "dsh")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	dec, err := sessionlog.NewDecoder(bytes.NewReader(body), sessionlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return ld
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range row.Events {
			var env map[string]any
			if err := json.Unmarshal(row.Events[i].LogicalJSON(), &env); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(env)
			lr := lrs.AppendEmpty()
			lr.SetEventName("session-log")
			lr.Body().SetStr("session-log")
			lr.SetTimestamp(pcommon.Timestamp(row.Events[i].Time * int64(time.Millisecond)))
			lr.Attributes().PutStr("sessionId", session)
			lr.Attributes().PutStr("content", string(b))
			lr.Attributes().PutInt("event.seq", row.Events[i].Seq)
			lr.Attributes().PutStr("event.type", row.Events[i].Type)
		}
	}
}

func otlpJSON(t *testing.T, ld plog.Logs) []byte {
	t.Helper()
	b, err := plogotlp.NewExportRequestFromLogs(ld).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// turnOf is the engine's first turn of a log's rows under a session key.
func turnOf(t *testing.T, key string, body []byte) *turnengine.Turn {
	t.Helper()
	eng := turnengine.New(turnengine.Config{})
	now := time.Now()
	if err := replay(eng, session{id: key, body: body, via: viaPost}, now); err != nil {
		t.Fatal(err)
	}
	eng.Flush(turnengine.CauseEndOfInput, now)
	for _, turn := range eng.Drain() {
		if turn.Number == 1 {
			return turn
		}
	}
	t.Fatalf("%q: no turn 1", key)
	return nil
}

// traceWithID is the spans of one trace among td's.
func traceWithID(td ptrace.Traces, id pcommon.TraceID) ptrace.Traces {
	out := ptrace.NewTraces()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if spans.At(k).TraceID() != id {
					continue
				}
				ors := out.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(ors.Resource())
				ss := ors.ScopeSpans().AppendEmpty()
				rs.ScopeSpans().At(j).Scope().CopyTo(ss.Scope())
				spans.At(k).CopyTo(ss.Spans().AppendEmpty())
			}
		}
	}
	return out
}

// got counts the turn traces (root spans) of td.
func got(td ptrace.Traces) int {
	n := 0
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if spans.At(k).ParentSpanID().IsEmpty() {
					n++
				}
			}
		}
	}
	return n
}
