//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// rssKiB reads a process's resident set size.
func rssKiB(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// postRows posts NDJSON rows of one session to the collector at ingest
// and returns the answer.
func postRows(t *testing.T, ingest, id string, rows [][]byte) postResult {
	t.Helper()
	return post(t, ingest+"/v1/sessions/"+id+"/events", viaPost, bytes.Join(rows, nil))
}

// TestBackendOutage stops Jaeger while sessions keep arriving, and restarts
// it (empty: memory storage) after a while; the collector itself is
// restarted in between. Every turn closed during the outage must arrive,
// exactly once, from the file_storage sending queue; the collector's RSS
// stays bounded meanwhile.
func TestBackendOutage(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to sample RSS")
	}
	ctx := context.Background()
	dir := t.TempDir()
	j := newJaegerPorts(t)
	c := newCollector(t, dir, testConfig("outage")).toJaeger(j)
	jaeger := startJaeger(t, dir, "jaeger", j)
	otelcol := c.start("otelcol-dsh-outage")
	pid := otelcol.cmd.Process.Pid

	// Warm-up: one session through the healthy pipeline.
	t0 := time.Now().Add(-time.Minute)
	warm := "0u7a6e00-0000-4000-8000-000000000000"
	if res := postRows(t, c.ingestURL(), warm, synthSession(warm, 2, t0)); res.code != http.StatusAccepted {
		t.Fatalf("warm-up post: HTTP %d %s", res.code, res.raw)
	}
	poll(t, "warm-up trace in Jaeger", 30*time.Second, func() error {
		_, err := jaegerTrace(ctx, j.query(), turnrender.TraceID(warm, 2))
		return err
	}, otelcol)
	base, err := rssKiB(pid)
	if err != nil {
		t.Fatal(err)
	}

	// Outage.
	if err := jaeger.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	const nSessions, nTurns = 40, 10
	ids := make([]string, nSessions)
	maxRSS := base
	sample := func() {
		if v, err := rssKiB(pid); err == nil && v > maxRSS {
			maxRSS = v
		}
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("0u7a6e00-0000-4000-8000-%012d", i+1)
		if res := postRows(t, c.ingestURL(), ids[i], synthSession(ids[i], nTurns, t0.Add(time.Duration(i)*time.Second))); res.code != http.StatusAccepted {
			t.Fatalf("post during the outage: HTTP %d %s", res.code, res.raw)
		}
		sample()
	}
	// The spans wait in the queue while the exporter retries.
	poll(t, "spans queued", 15*time.Second, func() error {
		n, err := metricSum(ctx, c.selfURL(), "otelcol_exporter_queue_size")
		if err == nil && n == 0 {
			err = fmt.Errorf("otelcol_exporter_queue_size = 0")
		}
		return err
	}, otelcol)
	for i := 0; i < 25; i++ { // 5s of outage
		sample()
		time.Sleep(200 * time.Millisecond)
	}
	queued, _ := metricSum(ctx, c.selfURL(), "otelcol_exporter_queue_size")

	// The queue is on disk: the collector is restarted (SIGTERM) while
	// Jaeger is still down, and the new process sends what the old one
	// queued.
	if err := otelcol.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	otelcol = c.start("otelcol-dsh-outage-restarted")
	pid = otelcol.cmd.Process.Pid
	poll(t, "queue restored from file_storage", 15*time.Second, func() error {
		n, err := metricSum(ctx, c.selfURL(), "otelcol_exporter_queue_size")
		if err == nil && n != queued {
			err = fmt.Errorf("otelcol_exporter_queue_size = %v after the restart, want %v", n, queued)
		}
		return err
	}, otelcol)

	// Recovery.
	startJaeger(t, dir, "jaeger-restarted", j)
	var missing []string
	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		for n := 1; n <= nTurns; n++ {
			var turns, all int
			for {
				td, err := jaegerTrace(ctx, j.query(), turnrender.TraceID(id, int64(n)))
				if err == nil {
					turns, all = turnSpans(td)
				}
				sample()
				if all >= 3 || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if turns != 1 || all != 3 {
				missing = append(missing, fmt.Sprintf("%s turn %d: %d turn spans, %d spans (want 1, 3)", id, n, turns, all))
			}
		}
	}
	for _, m := range missing {
		t.Errorf("after the outage: %s", m)
	}
	poll(t, "queue drained", 30*time.Second, func() error {
		n, err := metricSum(ctx, c.selfURL(), "otelcol_exporter_queue_size")
		if err == nil && n != 0 {
			err = fmt.Errorf("otelcol_exporter_queue_size = %v", n)
		}
		return err
	}, otelcol)
	failed, _ := metricSum(ctx, c.selfURL(), "otelcol_exporter_send_failed_spans")
	sent, _ := metricSum(ctx, c.selfURL(), "otelcol_exporter_sent_spans")
	t.Logf("RSS: %d KiB before the outage, at most %d KiB during it and the recovery; %v requests queued at the peak; sent %v spans, %v failed (given up)",
		base, maxRSS, queued, sent, failed)
	// Sent by the restarted collector: every outage turn, 3 spans each.
	if want := float64(nSessions * nTurns * 3); sent != want {
		t.Errorf("otelcol_exporter_sent_spans = %v, want %v", sent, want)
	}
	if failed != 0 {
		t.Errorf("otelcol_exporter_send_failed_spans = %v: spans were given up", failed)
	}
	// Bounded: the queue is on disk, so memory must not grow with the
	// backlog — well under what holding it all would suggest, and far
	// from the memory_limiter's 400 MiB.
	if maxRSS > base+64*1024 || maxRSS > 300*1024 {
		t.Errorf("RSS grew from %d KiB to %d KiB during the outage", base, maxRSS)
	}
}
