//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// overloadConfig: the logs pipeline fans out to turn_state and to an
// otlp_http exporter (a test sink) whose sending queue holds two requests
// and does not block: while the sink stalls, the queue fills and the
// pipeline refuses — the receiver must answer 503 + Retry-After and keep
// nothing of the refused request.
const overloadConfig = `
extensions:
  health_check:
    endpoint: 127.0.0.1:13133
receivers:
  session_event:
    http:
      endpoint: 127.0.0.1:14320
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 400
    spike_limit_mib: 100
connectors:
  turn_state:
    dangling_timeout: 30s
exporters:
  otlp_http/sink:
    logs_endpoint: http://${env:E2E_SINK}/v1/logs
    compression: none
    timeout: 30s
    retry_on_failure:
      enabled: false
    sending_queue:
      enabled: true
      sizer: requests
      queue_size: 2
      num_consumers: 1
      block_on_overflow: false
  otlp_grpc/jaeger:
    endpoint: 127.0.0.1:24317
    tls:
      insecure: true
service:
  extensions: [health_check]
  pipelines:
    logs:
      receivers: [session_event]
      processors: [memory_limiter]
      exporters: [turn_state, otlp_http/sink]
    traces:
      receivers: [turn_state]
      exporters: [otlp_grpc/jaeger]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: 17888
`

// logSink is an OTLP/HTTP logs endpoint that counts every record by
// session and seq, and stalls every request while closed.
type logSink struct {
	mu    sync.Mutex
	seen  map[string]int // "session/seq" or "session/header"
	open  chan struct{}
	once  sync.Once
	stall int
}

func (s *logSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.open:
	default:
		s.mu.Lock()
		s.stall++
		s.mu.Unlock()
		select {
		case <-s.open:
		case <-time.After(20 * time.Second):
		}
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rl := range req.Logs().ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				sid, _ := lr.Attributes().Get("session.id")
				key := sid.AsString() + "/header"
				if seq, ok := lr.Attributes().Get("event.seq"); ok {
					key = sid.AsString() + "/" + seq.AsString()
				}
				s.seen[key]++
			}
		}
	}
	s.mu.Unlock()
	resp, _ := plogotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(resp)
}

// TestOverloadBackpressure: eight clients post 48 sessions in two halves
// each while the downstream stalls. Refused requests get 503 with
// Retry-After and nothing of them is kept; the clients retry (bounded,
// honouring Retry-After), and in the end every row was accepted exactly
// once (202 counts), delivered downstream exactly once (the sink), and
// every turn has exactly one span in Jaeger.
func TestOverloadBackpressure(t *testing.T) {
	otelcolBin := lookPath(t, "OTELCOL_DSH", toolsHint)
	requireFree(t, "127.0.0.1:24317", "127.0.0.1:24318", "127.0.0.1:26685", "127.0.0.1:26686", "127.0.0.1:23133",
		"127.0.0.1:14320", "127.0.0.1:13133", "127.0.0.1:17888")
	ctx := context.Background()
	dir := t.TempDir()

	sink := &logSink{seen: map[string]int{}, open: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: sink, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	openSink := func() { sink.once.Do(func() { close(sink.open) }) }
	t.Cleanup(func() { openSink(); srv.Close() })

	cfg := filepath.Join(dir, "overload.yaml")
	if err := os.WriteFile(cfg, []byte(overloadConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	startJaeger(t, dir, "jaeger", suiteJaeger)
	otelcol := start(t, dir, "otelcol-dsh-overload", otelcolBin, []string{"E2E_SINK=" + ln.Addr().String()}, "--config="+cfg)
	poll(t, "otelcol-dsh healthy", 30*time.Second, httpOK(collectorHC), otelcol)

	const nSessions, nTurns, nClients, maxAttempts = 48, 4, 8, 30
	t0 := time.Now().Add(-time.Minute)
	type result struct {
		accepted, dups, refused, noRetryAfter, gaveUp int
		other                                         []string
	}
	results := make([]result, nClients)
	ids := make([]string, nSessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("0ae10ad0-0000-4000-8000-%012d", i)
	}
	totalRows := nSessions * (1 + nTurns*rowsPerTurn)
	// The sink stalls for the first 3 s of the run, then takes everything.
	time.AfterFunc(3*time.Second, openSink)

	var wg sync.WaitGroup
	for c := 0; c < nClients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			res := &results[c]
			for i := c; i < nSessions; i += nClients {
				rows := synthSession(ids[i], nTurns, t0.Add(time.Duration(i)*time.Second))
				half := 1 + (nTurns/2)*rowsPerTurn
				for _, part := range [][][]byte{rows[:half], rows[half:]} {
					body := strings.Join(func() []string {
						out := make([]string, len(part))
						for k, r := range part {
							out[k] = string(r)
						}
						return out
					}(), "")
					for attempt := 1; ; attempt++ {
						req, _ := http.NewRequest(http.MethodPost, collectorHTTP+"/v1/sessions/"+ids[i]+"/events", strings.NewReader(body))
						req.Header.Set("Content-Type", "application/x-ndjson")
						resp, err := client.Do(req)
						if err != nil {
							res.other = append(res.other, err.Error())
							return
						}
						var pr postResult
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						pr.code = resp.StatusCode
						pr.raw = strings.TrimSpace(string(b))
						if resp.StatusCode == http.StatusAccepted {
							_, _ = fmt.Sscanf(pr.raw, `{"accepted":%d,"duplicates":%d}`, &pr.Accepted, &pr.Duplicates)
							res.accepted += pr.Accepted
							res.dups += pr.Duplicates
							break
						}
						if resp.StatusCode != http.StatusServiceUnavailable {
							res.other = append(res.other, fmt.Sprintf("HTTP %d %s", pr.code, pr.raw))
							return
						}
						res.refused++
						wait := time.Second
						if ra := resp.Header.Get("Retry-After"); ra == "" {
							res.noRetryAfter++
						} else if d, err := time.ParseDuration(ra + "s"); err == nil {
							wait = d
						}
						if attempt == maxAttempts {
							res.gaveUp++
							return
						}
						time.Sleep(wait)
					}
				}
			}
		}(c)
	}
	wg.Wait()

	var sum result
	for _, r := range results {
		sum.accepted += r.accepted
		sum.dups += r.dups
		sum.refused += r.refused
		sum.noRetryAfter += r.noRetryAfter
		sum.gaveUp += r.gaveUp
		sum.other = append(sum.other, r.other...)
	}
	t.Logf("clients: %d rows accepted, %d duplicates, %d refusals (503), sink stalled %d requests",
		sum.accepted, sum.dups, sum.refused, sink.stall)
	for _, o := range sum.other {
		t.Errorf("unexpected answer: %s", o)
	}
	if sum.gaveUp != 0 {
		t.Errorf("%d posts still refused after %d attempts", sum.gaveUp, maxAttempts)
	}
	if sum.refused == 0 {
		t.Errorf("no 503: the overload never reached the receiver (the test proves nothing)")
	}
	if sum.noRetryAfter != 0 {
		t.Errorf("%d of %d 503 answers had no Retry-After", sum.noRetryAfter, sum.refused)
	}
	// Exactly once at the receiver: every row accepted by one 202, none a
	// duplicate (a 503 keeps nothing, so the retry is not a duplicate).
	if sum.accepted != totalRows || sum.dups != 0 {
		t.Errorf("accepted %d rows with %d duplicates, want %d and 0", sum.accepted, sum.dups, totalRows)
	}
	// Exactly once downstream.
	poll(t, "every row at the sink", 30*time.Second, func() error {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		if len(sink.seen) != totalRows {
			return fmt.Errorf("%d distinct rows at the sink, want %d", len(sink.seen), totalRows)
		}
		return nil
	}, otelcol)
	sink.mu.Lock()
	for k, n := range sink.seen {
		if n != 1 {
			t.Errorf("row %s reached the sink %d times", k, n)
		}
	}
	sink.mu.Unlock()
	// Exactly one turn span per turn.
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for n := 1; n <= nTurns; n++ {
			var turns, all int
			for {
				td, err := jaegerTrace(ctx, jaegerQuery, turnrender.TraceID(id, int64(n)))
				if err == nil {
					turns, all = turnSpans(td)
				}
				if all >= 3 || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if turns != 1 || all != 3 {
				t.Errorf("%s turn %d: %d turn spans, %d spans in Jaeger (want 1, 3)", id, n, turns, all)
			}
		}
	}
	// The refusals are visible in the receiver's self-metrics too.
	if refused, err := metricSum(ctx, selfURL, "otelcol_receiver_refused_log_records"); err != nil || refused == 0 {
		t.Errorf("otelcol_receiver_refused_log_records = %v (%v), want > 0", refused, err)
	}
}
