//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// TestOverloadBackpressure: eight clients post 48 sessions in two halves
// each while the downstream stalls. Refused requests get 503 with
// Retry-After and nothing of them is kept; the clients retry (bounded,
// honouring Retry-After), and in the end every row was accepted exactly
// once (202 counts), delivered downstream exactly once (the sink), and
// every turn has exactly one span in Jaeger.
func TestOverloadBackpressure(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sink := startCountingSink(t)
	sink.hold()
	j := newJaegerPorts(t)
	startJaeger(t, dir, "jaeger", j)
	c := newCollector(t, dir, testConfig("overload")).toJaeger(j).toSink(sink)
	otelcol := c.start("otelcol-dsh-overload")
	ingest := c.ingestURL()

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
	time.AfterFunc(3*time.Second, sink.release)

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
						req, _ := http.NewRequest(http.MethodPost, ingest+"/v1/sessions/"+ids[i]+"/events", strings.NewReader(body))
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
		sum.accepted, sum.dups, sum.refused, sink.stalledRequests())
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
		if n := len(sink.rowCounts()); n != totalRows {
			return fmt.Errorf("%d distinct rows at the sink, want %d", n, totalRows)
		}
		return nil
	}, otelcol)
	for k, n := range sink.rowCounts() {
		if n != 1 {
			t.Errorf("row %s reached the sink %d times", k, n)
		}
	}
	// Exactly one turn span per turn.
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for n := 1; n <= nTurns; n++ {
			var turns, all int
			for {
				td, err := jaegerTrace(ctx, j.query(), turnrender.TraceID(id, int64(n)))
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
	if refused, err := metricSum(ctx, c.selfURL(), "otelcol_receiver_refused_log_records"); err != nil || refused == 0 {
		t.Errorf("otelcol_receiver_refused_log_records = %v (%v), want > 0", refused, err)
	}
}
