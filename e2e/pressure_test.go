//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// soak reports whether the long variants run (make soak sets DSH_SOAK=1).
func soak() bool { return os.Getenv("DSH_SOAK") == "1" }

// pressureRun is a fault test's collector on the restart configuration
// with a fleet of 30 tailed and 10 posted sessions, its rows at a sink and
// its spans in a Jaeger of its own.
type pressureRun struct {
	t      *testing.T
	dir    string
	state  string
	sink   *otlpSink
	fleet  *fleet
	c      *collector
	col    *process
	ports  jaegerPorts
	jaeger *process
	rng    *rand.Rand
}

// startPressure starts Jaeger, the collector on the restart configuration
// with its state in state (made when missing; "": its own) and vars
// ("NAME=value") set, and the fleet; seedVar names the seed's variable.
func startPressure(t *testing.T, state, seedVar, tag string, vars ...string) *pressureRun {
	t.Helper()
	seed := seedFrom(t, seedVar)
	t.Logf("seed %d (%s=%d reproduces the fleet's rows and the fault's moments)", seed, seedVar, seed)
	dir := t.TempDir()
	if state == "" {
		state = filepath.Join(dir, "state")
	}
	root := filepath.Join(dir, "sessions")
	r := &pressureRun{t: t, dir: dir, state: state, rng: rand.New(rand.NewPCG(seed, 0xfa17))}
	r.sink = startCountingSink(t)
	r.ports = newJaegerPorts(t)
	r.jaeger = startJaeger(t, dir, "jaeger", r.ports)
	r.c = restartCollector(t, dir, r.ports, r.sink).set("DSH_SESSIONS", root).set("STATE_DIR", state)
	for _, v := range vars {
		name, value, _ := strings.Cut(v, "=")
		r.c.set(name, value)
	}
	r.col = r.c.start("otelcol-dsh")
	r.fleet = newFleet(t, seed, tag, root, 30, r.c.ingestURL(), 10)
	r.fleet.start()
	return r
}

// jaegerAway makes Jaeger unreachable: the process is paused (SIGSTOP), so
// the exporter's connections time out, while its in-memory storage keeps
// every span it had; jaegerBack resumes it.
func (r *pressureRun) jaegerAway() {
	if err := syscall.Kill(r.jaeger.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(r.jaegerBack) // a paused process would not stop
}

func (r *pressureRun) jaegerBack() {
	_ = syscall.Kill(r.jaeger.cmd.Process.Pid, syscall.SIGCONT)
}

// finish stops the fleet and checks that everything caught up: every row
// at the sink, every turn complete and once in Jaeger, the collector up
// all along, no panic.
func (r *pressureRun) finish() written {
	t := r.t
	r.fleet.finish(t)
	w := r.fleet.written()
	want := expect(t, w.sessions)
	waitRows(t, r.sink, w.rows, 180*time.Second, r.col)
	rows := countRows(r.sink, r.fleet, w.rows)
	if rows.lost > 0 || rows.unexpected > 0 {
		errorf(t, "rows: %d lost, %d never written", rows.lost, rows.unexpected)
	}
	turns := checkTurns(context.Background(), r.ports.query(), want.turns, true)
	report(func(format string, args ...any) { errorf(t, format, args...) }, turns.problems)
	t.Logf("%d sessions, %d rows (%d deliveries repeated, most %d of one row), %d turns (%d problems); HTTP: %d posts, %d answered 503, %d resent",
		len(r.fleet.agents), len(w.rows), rows.repeated, rows.most, len(want.turns), len(turns.problems), w.posts, w.refused, w.retries)
	if done, err := r.col.exited(); done {
		errorf(t, "the collector exited (%v): it must stay up", err)
	}
	noPanic(t, []*process{r.col})
	return w
}

// mountTmpfs mounts a tmpfs of size at dir for the test (root only; the
// test is skipped otherwise, failed under CI=true).
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFailCI(t, "a full disk is a tmpfs mounted for the test, which needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		skipOrFailCI(t, fmt.Sprintf("mount a tmpfs: %v: %s", err, out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
	})
}

// fill writes a filler file until the file system of dir is full, and
// returns it.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path
			}
			t.Fatal(err)
		}
	}
}

// TestFullDisk: the file_storage directory (a small tmpfs) fills up while
// 30 sessions are tailed and 10 posted and Jaeger is away, so the
// exporters' queues must grow: every write of the state fails — the
// queues', the journal's, the checkpoints', the dedup state's. The
// collector stays up and says so once per cause; HTTP answers 503 with
// Retry-After; the tailer does not read on; the write errors really
// happened (counted). Once space returns and Jaeger is back everything
// catches up: no row lost, every turn exactly one complete span.
func TestFullDisk(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	mountTmpfs(t, state, "32m")
	r := startPressure(t, state, "DSH_FULLDISK_SEED", "d15cf011")
	full := 15 * time.Second
	episodes := 1
	if soak() {
		full, episodes = 60*time.Second, 3
	}
	time.Sleep(time.Duration(1000+r.rng.IntN(2000)) * time.Millisecond)
	r.jaegerAway()
	for e := range episodes {
		time.Sleep(time.Duration(500+r.rng.IntN(1500)) * time.Millisecond)
		filler := fill(t, state)
		t.Logf("episode %d: %s full for %v (Jaeger away)", e+1, state, full)
		before := r.writeFailures()
		poll(t, "the write errors", 30*time.Second, func() error {
			if r.writeFailures() == before {
				return fmt.Errorf("no failed write counted yet")
			}
			return nil
		}, r.col)
		time.Sleep(full)
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	failures := map[string]float64{}
	for _, m := range writeFailureMetrics {
		failures[m] = r.c.self(m)
	}
	r.jaegerBack()
	w := r.finish()

	out := r.col.output()
	enospc := strings.Count(out, "no space left on device")
	t.Logf("write errors counted: %v; %d log lines name ENOSPC, by where they were logged: %v", failures, enospc, byCaller(out, "no space left on device"))
	if r.writeFailures() == 0 || enospc == 0 {
		errorf(t, "the disk never filled: the test proves nothing")
	}
	if w.refused == 0 {
		errorf(t, "no request was answered 503 while the disk was full")
	}
	// dshtrace's own lines: once per episode and cause, not per row, file
	// or request.
	for _, line := range []string{
		"Cannot store read checkpoints",
		"Cannot store the HTTP deduplication state",
		"The traces consumer refuses closed turns",
		"The pipeline refuses session rows from the tailed files",
		"The pipeline refuses posted session rows",
	} {
		if n := strings.Count(out, line); n > 2*episodes {
			errorf(t, "%q logged %d times over %d episodes: want once per episode, not per row", line, n, episodes)
		}
	}
}

// writeFailureMetrics are the self-metrics that count a failed write of
// state: dshtrace's (the receiver's state, the journal, turns refused by
// the traces queue) and the collector's (spans and log records its queues
// could not take).
var writeFailureMetrics = []string{
	"otelcol_receiver_session_event_state_write_failures",
	"otelcol_connector_turn_state_journal_write_failures",
	"otelcol_connector_turn_state_emit_failures",
	"otelcol_exporter_enqueue_failed_spans",
	"otelcol_exporter_enqueue_failed_log_records",
}

// writeFailures is their sum.
func (r *pressureRun) writeFailures() float64 {
	var n float64
	for _, m := range writeFailureMetrics {
		n += r.c.self(m)
	}
	return n
}

// TestLongOutage: Jaeger is away for longer than the traces exporter's
// queue can hold (a queue of 20 requests here; ten minutes under make
// soak) while 30 sessions are tailed and 10 posted. The queue fills and
// refuses; turn_state holds the refused turns and refuses the batches
// after them, so the backpressure reaches the sources — HTTP 503 with
// Retry-After, the tailer waiting — and nothing is dropped. When Jaeger
// is back everything catches up: no row lost, every turn once.
func TestLongOutage(t *testing.T) {
	r := startPressure(t, "", "DSH_OUTAGE_SEED", "0a7a6e00", "QUEUE_SIZE=20")
	away := 30 * time.Second
	if soak() {
		away = 10 * time.Minute
	}
	time.Sleep(time.Duration(1000+r.rng.IntN(2000)) * time.Millisecond)
	r.jaegerAway()
	var held float64
	poll(t, "turns held (the queue full)", 120*time.Second, func() error {
		if held = r.c.self("otelcol_connector_turn_state_turns_held"); held == 0 {
			return fmt.Errorf("no turn held yet")
		}
		return nil
	}, r.col)
	t.Logf("the queue is full: %v turns held", held)
	time.Sleep(away)
	full := r.c.self("otelcol_exporter_enqueue_failed_spans")
	r.jaegerBack()
	w := r.finish()
	t.Logf("Jaeger away for %v: %v spans refused by the full queue, %d requests answered 503", away, full, w.refused)
	if full == 0 || w.refused == 0 {
		errorf(t, "the queue never refused (%v spans) or no request was answered 503 (%d): the backpressure was not exercised", full, w.refused)
	}
	if lost := r.c.self("otelcol_connector_turn_state_turns_lost"); lost != 0 {
		errorf(t, "%v turns lost", lost)
	}
}

// byCaller counts the log lines that contain s by the code location that
// logged them (zap's caller column).
func byCaller(log, s string) map[string]int {
	out := map[string]int{}
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, s) {
			continue
		}
		f := strings.Fields(l)
		if len(f) >= 3 {
			out[f[2]]++
		}
	}
	return out
}
