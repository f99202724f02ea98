//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// The built-in configuration's fixed addresses (cmd/otelcol-dsh/internal/defaultconfig).
const (
	defaultIngest  = "http://localhost:4320"
	defaultMetrics = "http://localhost:8889/metrics"
	defaultSelf    = "http://localhost:8888/metrics"
)

// TestDefaultConfig runs otelcol-dsh without --config, as `make run` does:
// it must take HTTP posts on localhost:4320, tail $DSH_HOME/sessions from the
// beginning, print the finished turns, serve the metrics on localhost:8889,
// and keep its tail checkpoints in the user's state directory, so that a
// restart reads on where it stopped. It is the one scenario on fixed ports
// and without the harness: the built-in configuration's own addresses are
// what it judges (and it fails at once when they are taken).
func TestDefaultConfig(t *testing.T) {
	bin := lookPath(t, "OTELCOL_DSH", toolsHint)
	corpus := testcorpus.Dir(t)
	dir := t.TempDir()
	home, dshHome, state := filepath.Join(dir, "home"), filepath.Join(dir, "dsh-home"), filepath.Join(dir, "state")
	env := []string{"HOME=" + home, "DSH_HOME=" + dshHome, "XDG_STATE_HOME=" + state}
	requireFree(t, "127.0.0.1:4320", "127.0.0.1:8889", "127.0.0.1:8888")

	// A tailed session, written up to the end of its first turn; the rest
	// arrives after a restart.
	const tailedID = "228b7b82-84ed-49b7-a567-981c03b28c77" // multi-turn: two turns
	tailed, err := os.ReadFile(filepath.Join(corpus, "v0/examples/acp-agent/tests/snapshots/multi-turn/session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(tailed, []byte("\n"))
	firstEnd := 0
	for i, l := range lines {
		if bytes.Contains(l, []byte(`"type":"turn/end"`)) {
			firstEnd = i + 1
			break
		}
	}
	if firstEnd == 0 {
		t.Fatal("multi-turn: no turn/end")
	}
	path := filepath.Join(dshHome, "sessions", "--e2e--", tailedID, "session.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Join(lines[:firstEnd], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	posted, err := os.ReadFile(filepath.Join(corpus, "v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// `validate` and `print-config` without --config check the built-in one.
	validate := exec.Command(bin, "validate")
	validate.Env = append(os.Environ(), env...)
	if out, err := validate.CombinedOutput(); err != nil {
		t.Fatalf("otelcol-dsh validate (built-in configuration): %v\n%s", err, out)
	}

	p := start(t, dir, "otelcol-dsh-default", bin, env)
	poll(t, "metrics endpoint", 30*time.Second, httpOK(defaultMetrics), p)
	// The exporters start before the receivers: the metrics endpoint can
	// answer while the ingest endpoint does not listen yet.
	poll(t, "ingest endpoint", 30*time.Second, httpAnswers(defaultIngest+"/v1/sessions/e2e-default/events"), p)
	res := post(t, defaultIngest+"/v1/sessions/e2e-default/events", viaPost, posted)
	if res.code != http.StatusAccepted || res.Accepted == 0 {
		t.Fatalf("POST to the built-in endpoint: HTTP %d %s", res.code, res.raw)
	}
	poll(t, "two turns counted", 30*time.Second, counterEquals(ctx, defaultMetrics, "dsh_turns_total", 2), p)
	// One debug line per finished turn span, naming its trace.
	for _, id := range []string{turnrender.TraceID(tailedID, 1).String(), turnrender.TraceID("e2e-default", 1).String()} {
		poll(t, "turn line for trace "+id, 10*time.Second, func() error {
			if !strings.Contains(p.output(), "invoke_agent dsh "+id) {
				return fmt.Errorf("no line `invoke_agent dsh %s` in the log", id)
			}
			return nil
		}, p)
	}
	checkpoints := filepath.Join(state, "dshtrace", "otelcol-dsh")
	if entries, err := os.ReadDir(checkpoints); err != nil || len(entries) == 0 {
		t.Errorf("no checkpoints in %s: %v", checkpoints, err)
	}
	if err := p.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}

	// Restarted, it reads on from its checkpoint: exactly the appended rows.
	appendFile(t, path, bytes.Join(lines[firstEnd:], nil))
	want := float64(rows(bytes.Join(lines[firstEnd:], nil)))
	p2 := start(t, dir, "otelcol-dsh-default-restarted", bin, env)
	poll(t, "appended rows read", 30*time.Second, func() error {
		n, err := acceptedFrom(ctx, defaultSelf)
		if err != nil {
			return err
		}
		if n < want {
			return fmt.Errorf("%v rows accepted, want %v", n, want)
		}
		if n > want {
			t.Fatalf("%v rows accepted after the restart, want %v: the file was read again from its start", n, want)
		}
		return nil
	}, p2)
	// Re-posting the same session after the restart is acknowledged as
	// duplicates (the HTTP dedup state lives in the same storage).
	poll(t, "ingest endpoint after the restart", 30*time.Second, httpAnswers(defaultIngest+"/v1/sessions/e2e-default/events"), p2)
	res = post(t, defaultIngest+"/v1/sessions/e2e-default/events", viaPost, posted)
	if res.code != http.StatusAccepted || res.Accepted != 0 || res.Duplicates == 0 {
		t.Errorf("re-post after restart: HTTP %d %s; want all duplicates", res.code, res.raw)
	}
	if err := p2.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// counterEquals is a poll check: the sum of a metric's series on a
// Prometheus text endpoint equals want.
func counterEquals(ctx context.Context, url, name string, want float64) func() error {
	return func() error {
		sum, err := metricSum(ctx, url, name)
		if err == nil && sum != want {
			err = fmt.Errorf("%s = %v, want %v", name, sum, want)
		}
		return err
	}
}

// metricSum adds up the series of a metric on a Prometheus text endpoint.
func metricSum(ctx context.Context, url, name string) (float64, error) {
	code, body, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("%s: HTTP %d", url, code)
	}
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)`)
	var sum float64
	for _, m := range line.FindAllSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		sum += v
	}
	return sum, nil
}
