// Command harness runs the collector benchmarks of bench/ on a corpus written
// by bench/gen (its manifest.json says what to expect):
//
//	compare  the I/O floor (reading the files), otelcol-dsh-bench tailing them
//	         (session_event → turn_state → traces + metrics, and the log
//	         records too, → count) and otelcol-filelog-bench on the same
//	         files (filelog + json_parser → count); events/s, CPU seconds and
//	         peak RSS of each, and the ratios. Ends with the line
//	         `throughput ratio dshtrace/filelog: X.XX`.
//	scale    otelcol-dsh-bench alone on each corpus given: peak RSS once
//	         everything is counted (memory over session length, over open turns).
//	sampling otelcol-dsh-bench with turn_state's sampling at session_ratio 1
//	         and at -ratio: spans exported, CPU per event and peak RSS of each.
//
// Each collector run is a fresh process (its own process group) reading the
// files from the beginning, with no checkpoint storage, its self-telemetry
// off. A run ends when the count exporter's status file shows every
// expected item: filelog — one log record per line; dshtrace — one log
// record per physical row (headers included) and every span of the closed
// turns. Its wall time runs from just before the process is started to the
// count exporter's last item; CPU time (user + system, /proc/PID/stat) and
// peak RSS (VmHWM, /proc/PID/status) are read at that moment (the peak of
// RssAnon, the process's own memory, is sampled at every poll), then the
// process is stopped. events/s = the corpus's logical events (v0 packed rows
// expanded) ÷ wall time, the same numerator for every system.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dshtrace/dshtrace/bench/internal/benchproc"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var err error
	switch os.Args[1] {
	case "compare":
		err = compareCmd(ctx, os.Args[2:])
	case "scale":
		err = scaleCmd(ctx, os.Args[2:])
	case "sampling":
		err = samplingCmd(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: harness compare -dsh BIN -filelog BIN -corpus DIR [-runs N]\n       harness scale -dsh BIN [-label L] CORPUS...\n       harness sampling -dsh BIN -corpus DIR [-runs N] [-ratio R]")
	os.Exit(2)
}

// manifest is the part of bench/gen's manifest.json the harness reads.
type manifest struct {
	Params    json.RawMessage `json:"params"`
	Files     int             `json:"files"`
	Rows      int64           `json:"rows"`
	Events    int64           `json:"events"`
	Bytes     int64           `json:"bytes"`
	Turns     int64           `json:"turns"`
	OpenTurns int64           `json:"open_turns"`
	Spans     int64           `json:"spans"`
}

func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("%v (write the corpus with bench/gen)", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s/manifest.json: %v", dir, err)
	}
	return &m, nil
}

// openCorpus reads a corpus's manifest and lists its session files,
// checking that they are the manifest's, and prints what it holds: the
// preamble of every run over it.
func openCorpus(dir string) (m *manifest, root string, files []string, err error) {
	if m, err = readManifest(dir); err != nil {
		return nil, "", nil, err
	}
	if root, err = filepath.Abs(dir); err != nil {
		return nil, "", nil, err
	}
	if files, err = corpusFiles(root); err != nil {
		return nil, "", nil, err
	}
	if len(files) != m.Files {
		return nil, "", nil, fmt.Errorf("%s: %d session files, the manifest says %d", root, len(files), m.Files)
	}
	fmt.Printf("# corpus %s: %d files, %d rows, %d events, %.1f MiB, %d turns, %d spans of closed turns\n",
		root, m.Files, m.Rows, m.Events, mib(m.Bytes), m.Turns, m.Spans)
	var params bytes.Buffer
	if json.Compact(&params, m.Params) == nil {
		fmt.Printf("# generator params %s\n", params.String())
	}
	return m, root, files, nil
}

// corpusFiles are the corpus's session files, the same set both collectors'
// include patterns match.
func corpusFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "session") && strings.HasSuffix(d.Name(), ".jsonl") {
			files = append(files, path)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// result is one measured run.
type result struct {
	name      string
	wall      time.Duration // start → last item
	firstItem time.Duration // start → first item
	cpu       time.Duration
	peakRSS   int64 // bytes
	// peakAnon is the largest RssAnon seen (sampled at every poll, 20 ms):
	// the process's own memory, without the pages of its executable that
	// VmHWM also counts — how many of those are resident depends on what
	// the page cache holds of the file, not on the work.
	peakAnon int64 // bytes
	logs     int64
	spans    int64
	points   int64
}

// status mirrors bench/countexporter.Status (the harness imports no
// collector component; sampling replays the corpus with the turn engine,
// its renderer's span count and the sampler, which need pdata only).
type status struct {
	PID           int   `json:"pid"`
	LogRecords    int64 `json:"log_records"`
	Spans         int64 `json:"spans"`
	DataPoints    int64 `json:"data_points"`
	FirstUnixNano int64 `json:"first_unix_nano"`
	LastUnixNano  int64 `json:"last_unix_nano"`
	LogsLast      int64 `json:"logs_last_unix_nano"`
	SpansLast     int64 `json:"spans_last_unix_nano"`
}

// want is what a run must count before it is done.
type want struct{ logs, spans int64 }

// runCollector starts bin with the config that cfg writes (given the status
// file path), waits until the count exporter shows w, measures, and stops
// the process.
func runCollector(ctx context.Context, name, bin string, cfg func(statusFile string) string, w want, timeout time.Duration, settle time.Duration) (*result, error) {
	dir, err := os.MkdirTemp("", "dsh-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	statusFile := filepath.Join(dir, "status.json")
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg(statusFile)), 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "collector.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()

	cmd := exec.Command(bin, "--config="+cfgFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	fail := func(err error) (*result, error) {
		stop()
		logFile.Sync()
		b, _ := os.ReadFile(logFile.Name())
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		return nil, fmt.Errorf("%s: %w\n---- collector log (last lines) ----\n%s", name, err, strings.Join(lines, "\n"))
	}

	deadline := time.After(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var s status
	var anon int64
	for {
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case err := <-exited:
			exited <- err
			return fail(fmt.Errorf("exited early: %v", err))
		case <-deadline:
			return fail(fmt.Errorf("timeout after %v: counted %d log records (want %d), %d spans (want %d)",
				timeout, s.LogRecords, w.logs, s.Spans, w.spans))
		case <-tick.C:
		}
		anon = max(anon, benchproc.StatusKB(cmd.Process.Pid, "RssAnon")*1024)
		b, err := os.ReadFile(statusFile)
		if err != nil {
			continue
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return fail(fmt.Errorf("status file: %v", err))
		}
		if s.LogRecords > w.logs || s.Spans > w.spans {
			return fail(fmt.Errorf("counted more than expected: %d log records (want %d), %d spans (want %d)",
				s.LogRecords, w.logs, s.Spans, w.spans))
		}
		if s.LogRecords == w.logs && s.Spans == w.spans {
			break
		}
	}
	if settle > 0 {
		time.Sleep(settle)
	}
	pid := cmd.Process.Pid
	r := &result{
		name:     name,
		cpu:      benchproc.CPUTime(pid),
		peakRSS:  benchproc.StatusKB(pid, "VmHWM") * 1024,
		peakAnon: max(anon, benchproc.StatusKB(pid, "RssAnon")*1024),
		logs:     s.LogRecords, spans: s.Spans, points: s.DataPoints,
	}
	last := max(s.LogsLast, s.SpansLast)
	r.wall = time.Unix(0, last).Sub(start)
	r.firstItem = time.Unix(0, s.FirstUnixNano).Sub(start)
	stop()
	return r, nil
}

func check(bin string) error {
	if bin == "" {
		return errors.New("collector binary not given (bench/build.sh prints them)")
	}
	_, err := os.Stat(bin)
	return err
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
