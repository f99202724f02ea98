// Command load measures HTTP ingest under load: it starts bin/otelcol-dsh
// with its own configuration (session_event over HTTP → turn_state → a
// sampling debug exporter for traces and the prometheus exporter for
// metrics, everything on 127.0.0.1), posts N synthetic v4 sessions of M
// events each from C concurrent workers in requests of R rows, and reports
// wall time, accepted events/s, request latency, the collector's peak RSS
// and CPU time. It then checks that every row was accepted exactly once and
// that dsh_turns_total counts every turn posted, and exits non-zero when a
// check fails. The collector is stopped at the end, whatever happens.
//
// Usage (from the repository root, after `make otelcol-dsh`):
//
//	go run ./bench/load -sessions 200 -events 10000 -workers 32 -rows 500
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dshtrace/dshtrace/bench/internal/benchproc"
)

func main() {
	collector := flag.String("collector", "bin/otelcol-dsh", "otelcol-dsh binary")
	sessions := flag.Int("sessions", 200, "sessions posted (N)")
	events := flag.Int("events", 10000, "events per session (M, at least 7; header not counted)")
	workers := flag.Int("workers", 32, "concurrent HTTP clients (C)")
	rows := flag.Int("rows", 500, "rows per request (R)")
	timeout := flag.Duration("timeout", 15*time.Minute, "overall time limit")
	maxRetries := flag.Int("max-retries", 30, "503 retries per request before giving up")
	keep := flag.Bool("keep", false, "keep the temp dir (config, collector log)")
	journal := flag.Bool("storage", false, "give the receiver's dedup state and turn_state's journal a file_storage, as deploy/collector does")
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancelT := context.WithTimeout(ctx, *timeout)
	err := run(ctx, options{
		collector: *collector, sessions: *sessions, events: *events, workers: *workers,
		rows: *rows, maxRetries: *maxRetries, keep: *keep, storage: *journal,
	})
	cancelT()
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("load: PASS")
}

type options struct {
	collector                       string
	sessions, events, workers, rows int
	maxRetries                      int
	keep                            bool
	storage                         bool
}

func run(ctx context.Context, o options) (err error) {
	if o.sessions < 1 || o.workers < 1 || o.rows < 1 {
		return errors.New("sessions, workers and rows must be positive")
	}
	plan, err := planTurns(o.events)
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(o.collector)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%v (run `make otelcol-dsh`)", err)
	}
	dir, err := os.MkdirTemp("", "dsh-load-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("temp dir:", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	ingest, promAddr, selfAddr := ports[0], ports[1], ports[2]
	cfg := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfg, []byte(config(ingest, promAddr, selfAddr, storageDir(o.storage, dir))), 0o644); err != nil {
		return err
	}

	col, err := startCollector(bin, cfg, filepath.Join(dir, "otelcol.log"))
	if err != nil {
		return err
	}
	defer func() {
		if serr := col.stop(10 * time.Second); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "---- collector log (last 30 lines) ----\n%s\n", col.tail(30))
		}
	}()

	if err := waitReady(ctx, col, "http://"+selfAddr+"/metrics", ingest); err != nil {
		return err
	}

	// RSS sampler: VmRSS every 200 ms.
	var peakRSS atomic.Int64
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tk := time.NewTicker(200 * time.Millisecond)
		defer tk.Stop()
		for {
			if v := benchproc.StatusKB(col.pid(), "VmRSS"); v > peakRSS.Load() {
				peakRSS.Store(v)
			}
			select {
			case <-stopSampler:
				return
			case <-tk.C:
			}
		}
	}()

	load0 := benchproc.LoadAvg()
	cpu0 := benchproc.CPUTime(col.pid())
	res, err := post(ctx, o, plan, "http://"+ingest)
	close(stopSampler)
	<-samplerDone
	load1 := benchproc.LoadAvg()
	if err != nil {
		return err
	}

	// Checks: every row accepted exactly once, every turn counted.
	var failures []string
	wantRows := int64(o.sessions) * int64(o.events+1) // + one header per session
	if res.accepted != wantRows || res.duplicates != 0 {
		failures = append(failures, fmt.Sprintf("accepted %d (want %d), duplicates %d (want 0)", res.accepted, wantRows, res.duplicates))
	}
	wantTurns := float64(o.sessions) * float64(len(plan))
	turns, terr := waitTurns(ctx, "http://"+promAddr+"/metrics", wantTurns, 30*time.Second)
	if terr != nil {
		failures = append(failures, terr.Error())
	}
	hwm := benchproc.StatusKB(col.pid(), "VmHWM")
	cpu1 := benchproc.CPUTime(col.pid())
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	selfCPU := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())

	lat := res.latencies
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	rows := []([2]string){
		{"sessions × events (+1 header each)", fmt.Sprintf("%d × %d", o.sessions, o.events)},
		{"workers, rows per request", fmt.Sprintf("%d, %d", o.workers, o.rows)},
		{"turns posted (steps per turn 1–3)", fmt.Sprintf("%.0f", wantTurns)},
		{"requests (503 retries)", fmt.Sprintf("%d (%d)", len(lat), res.retries)},
		{"bytes posted", fmt.Sprintf("%.1f MiB", float64(res.bytes)/(1<<20))},
		{"wall time", res.wall.Round(time.Millisecond).String()},
		{"rows accepted / duplicates", fmt.Sprintf("%d / %d", res.accepted, res.duplicates)},
		{"events/s accepted", fmt.Sprintf("%.0f", float64(res.accepted)/res.wall.Seconds())},
		{"MiB/s posted", fmt.Sprintf("%.1f", float64(res.bytes)/(1<<20)/res.wall.Seconds())},
		{"request latency p50", pct(lat, 0.50)},
		{"request latency p95", pct(lat, 0.95)},
		{"request latency p99", pct(lat, 0.99)},
		{"request latency max", pct(lat, 1)},
		{"collector peak RSS (VmRSS/200ms, VmHWM)", fmt.Sprintf("%.0f MiB, %.0f MiB", float64(peakRSS.Load())/1024, float64(hwm)/1024)},
		{"collector CPU time during run", fmt.Sprintf("%.1f s (%.2f cores)", (cpu1 - cpu0).Seconds(), (cpu1-cpu0).Seconds()/res.wall.Seconds())},
		{"load generator CPU time", fmt.Sprintf("%.1f s", selfCPU.Seconds())},
		{"load average before / after", load0 + " / " + load1},
		{"dsh_turns_total (sum)", fmt.Sprintf("%.0f (want %.0f)", turns, wantTurns)},
	}
	fmt.Println()
	fmt.Println("| figure | value |")
	fmt.Println("|---|---:|")
	for _, r := range rows {
		fmt.Printf("| %s | %s |\n", r[0], r[1])
	}
	fmt.Println()
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

func pct(sorted []time.Duration, p float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i].Round(100 * time.Microsecond).String()
}

// config is the collector's configuration: HTTP ingest only, turn spans to a
// debug exporter that logs one batch summary in a million, metrics to the
// prometheus exporter, self-telemetry pulled on its own port.
func config(ingest, prom, self, state string) string {
	host, port, _ := net.SplitHostPort(self)
	httpStorage, turnStorage, serviceExt, ext := "", "", "", ""
	if state != "" {
		httpStorage = "\n      storage: file_storage"
		turnStorage = "\n    storage: file_storage"
		serviceExt = "\n  extensions: [file_storage]"
		ext = "extensions:\n  file_storage:\n    directory: " + state + "\n    create_directory: true\n"
	}
	return ext + fmt.Sprintf(`receivers:
  session_event:
    http:
      endpoint: %s%s
processors:
  memory_limiter:
    check_interval: 1s
    limit_percentage: 80
    spike_limit_percentage: 20
  batch:
connectors:
  turn_state:
    metrics_flush_interval: 1s%s
exporters:
  debug:
    verbosity: basic
    sampling_initial: 1
    sampling_thereafter: 1000000
  prometheus:
    endpoint: %s
service:%s
  pipelines:
    logs:
      receivers: [session_event]
      processors: [memory_limiter]
      exporters: [turn_state]
    traces:
      receivers: [turn_state]
      processors: [batch]
      exporters: [debug]
    metrics:
      receivers: [turn_state]
      exporters: [prometheus]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: %s
                port: %s
`, ingest, httpStorage, turnStorage, prom, serviceExt, host, port)
}

// storageDir is the file_storage directory inside the run's temp dir, or
// "" without -storage.
func storageDir(on bool, dir string) string {
	if !on {
		return ""
	}
	return filepath.Join(dir, "state")
}

func freePorts(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []string
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// collector is the otelcol-dsh child, in its own process group.
type collector struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func startCollector(bin, cfg, logPath string) (*collector, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	c := &collector{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *collector) pid() int { return c.cmd.Process.Pid }

func (c *collector) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and, after grace, SIGKILL to the process group.
func (c *collector) stop(grace time.Duration) error {
	if c.exited() {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
		_ = syscall.Kill(-c.pid(), syscall.SIGKILL)
		<-c.done
		return fmt.Errorf("collector did not exit within %v of SIGTERM; killed", grace)
	}
}

func (c *collector) tail(n int) string {
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func waitReady(ctx context.Context, c *collector, selfURL, ingest string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(selfURL)
		if err == nil {
			resp.Body.Close()
			if conn, cerr := net.DialTimeout("tcp", ingest, time.Second); cerr == nil {
				conn.Close()
				return nil
			}
		}
		if c.exited() {
			return fmt.Errorf("collector exited at start: %v", c.err)
		}
		if time.Now().After(deadline) {
			return errors.New("collector not ready within 30s")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type result struct {
	wall                 time.Duration
	accepted, duplicates int64
	retries              int64
	bytes                int64
	latencies            []time.Duration
}

// post sends every session from o.workers workers; a worker posts one
// session's requests in order, then takes the next session.
func post(ctx context.Context, o options, plan []int, base string) (*result, error) {
	client := &http.Client{
		Timeout:   60 * time.Second,
		Transport: &http.Transport{MaxIdleConns: o.workers, MaxIdleConnsPerHost: o.workers, DisableCompression: true},
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		res      result
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	work := make(chan int)
	start := time.Now()
	for w := 0; w < o.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			var acc, dup, retries, nbytes int64
			defer func() {
				mu.Lock()
				res.latencies = append(res.latencies, lat...)
				res.accepted += acc
				res.duplicates += dup
				res.retries += retries
				res.bytes += nbytes
				mu.Unlock()
			}()
			var body bytes.Buffer
			for s := range work {
				id := fmt.Sprintf("00000000-0000-4000-8000-%012d", s)
				url := base + "/v1/sessions/" + id + "/events"
				g := newGenerator(id, plan)
				for first := true; g.seq < int64(o.events); first = false {
					body.Reset()
					if first {
						g.header(&body)
					}
					for n := 0; n < o.rows && g.seq < int64(o.events); n++ {
						g.next(&body)
					}
					for attempt := 0; ; attempt++ {
						t0 := time.Now()
						code, retryAfter, a, d, err := send(ctx, client, url, body.Bytes())
						if err != nil {
							fail(fmt.Errorf("session %s: %v", id, err))
							return
						}
						if code == http.StatusServiceUnavailable {
							retries++
							if attempt >= o.maxRetries {
								fail(fmt.Errorf("session %s: still 503 after %d retries", id, attempt))
								return
							}
							select {
							case <-ctx.Done():
								return
							case <-time.After(retryAfter):
							}
							continue
						}
						lat = append(lat, time.Since(t0))
						nbytes += int64(body.Len())
						acc += a
						dup += d
						break
					}
				}
			}
		}()
	}
feed:
	for s := 0; s < o.sessions; s++ {
		select {
		case work <- s:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	res.wall = time.Since(start)
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &res, nil
}

// send posts one request; on 202 it returns accepted and duplicates, on 503
// the Retry-After (bounded to 1–10 s); anything else is an error.
func send(ctx context.Context, c *http.Client, url string, body []byte) (code int, retryAfter time.Duration, accepted, duplicates int64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch resp.StatusCode {
	case http.StatusAccepted:
		var r struct {
			Accepted   int64 `json:"accepted"`
			Duplicates int64 `json:"duplicates"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("202 body %q: %v", b, err)
		}
		return resp.StatusCode, 0, r.Accepted, r.Duplicates, nil
	case http.StatusServiceUnavailable:
		ra := time.Second
		if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			ra = time.Duration(n) * time.Second
		}
		ra = min(max(ra, time.Second), 10*time.Second)
		return resp.StatusCode, ra, 0, 0, nil
	default:
		return 0, 0, 0, 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
}

// planTurns splits m events into turns of 1–3 steps (a turn of s steps is
// 2+5s events: turn/start, per step step/start, a model call, tool/call,
// tool/result, step/end, and turn/end), so that every turn is complete.
func planTurns(m int) ([]int, error) {
	for t := (m + 16) / 17; 7*t <= m; t++ {
		rest := m - 2*t
		if rest%5 != 0 {
			continue
		}
		steps := rest / 5
		if steps < t || steps > 3*t {
			continue
		}
		plan := make([]int, t)
		for i := range plan {
			plan[i] = steps / t
			if i < steps%t {
				plan[i]++
			}
		}
		return plan, nil
	}
	return nil, fmt.Errorf("%d events cannot be split into whole turns of 1-3 steps (try another count, at least 7)", m)
}

// generator writes one v4 session's rows: the header, then turns as the
// plan says, each step a model call that asks for a tool and its result.
type generator struct {
	id    string
	plan  []int
	seq   int64
	turn  int // 1-based, current
	step  int
	phase int
}

func newGenerator(id string, plan []int) *generator { return &generator{id: id, plan: plan} }

func (g *generator) header(w *bytes.Buffer) {
	fmt.Fprintf(w, `{"type":"session","version":4,"id":%q,"createdAt":1800000000000,"isSeeded":false,"delegationDepth":0}`+"\n", g.id)
}

func (g *generator) next(w *bytes.Buffer) {
	s, t := g.seq, 1_800_000_000_000+g.seq*5
	switch g.phase {
	case 0:
		g.turn++
		g.step = 0
		fmt.Fprintf(w, `{"type":"turn/start","seq":%d,"time":%d,"data":{"turn":%d}}`, s, t, g.turn)
	case 1:
		g.step++
		fmt.Fprintf(w, `{"type":"step/start","seq":%d,"time":%d,"data":{"turn":%d,"step":%d}}`, s, t, g.turn, g.step)
	case 2:
		fmt.Fprintf(w, `{"type":"assistant/message","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"message":{"id":"m%d","role":"assistant","content":[{"type":"tool-call","id":"c%d","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":100,"outputTokens":20},"stream":[{"type":"chunk","time":%d,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}]},"surfaceOp":"append"}`, s, t, g.turn, g.step, s, s, t)
	case 3:
		fmt.Fprintf(w, `{"type":"tool/call","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"callId":"c%d","name":"bash","arguments":"{}"}}`, s, t, g.turn, g.step, s-1)
	case 4:
		fmt.Fprintf(w, `{"type":"tool/result","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"message":{"id":"r%d","role":"tool","toolCallId":"c%d","content":[{"type":"text","text":"ok"}],"source":{"kind":"tool","callId":"c%d"}}},"sourceEventSeqs":[%d],"surfaceOp":"append"}`, s, t, g.turn, g.step, s, s-2, s-2, s-1)
	case 5:
		fmt.Fprintf(w, `{"type":"step/end","seq":%d,"time":%d,"data":{"turn":%d,"step":%d}}`, s, t, g.turn, g.step)
	case 6:
		fmt.Fprintf(w, `{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":%d,"reason":{"kind":"completed"}}}`, s, t, g.turn)
	}
	w.WriteByte('\n')
	switch {
	case g.phase == 5 && g.step < g.plan[g.turn-1]:
		g.phase = 1
	case g.phase == 6:
		g.phase = 0
	default:
		g.phase++
	}
	g.seq++
}

// waitTurns scrapes the prometheus exporter until the dsh_turns_total series
// sum to want, or timeout; it returns the last sum.
func waitTurns(ctx context.Context, url string, want float64, timeout time.Duration) (float64, error) {
	deadline := time.Now().Add(timeout)
	var last float64
	var lastErr error
	for {
		last, lastErr = scrapeSum(ctx, url, "dsh_turns_total")
		if lastErr == nil && last == want {
			return last, nil
		}
		if time.Now().After(deadline) {
			if lastErr != nil {
				return last, fmt.Errorf("dsh_turns_total: %v", lastErr)
			}
			return last, fmt.Errorf("dsh_turns_total sums to %.0f after %v, want %.0f", last, timeout, want)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func scrapeSum(ctx context.Context, url, metric string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		f := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %v", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}
