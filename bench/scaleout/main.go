// Command scaleout measures the Kafka tier as shipped: it runs
// deploy/collector/kafka-ingest.yaml (one instance) and
// kafka-turn-state.yaml (1, 2 or 3 instances, one consumer group) on
// tools/kfake with every broker request answered -latency late, posts a
// bench/gen corpus to the ingest tier over HTTP (each session's rows in
// order, in requests of -rows rows, from -workers workers), and times until
// the turn-state instances have closed every turn of the corpus.
//
// Per run it prints events/s end to end, the turn-state tier's CPU time per
// event (all its instances), the changelog records and bytes written per
// event, and each instance's peak RSS. The runs are: the journal off (the
// changelog block taken out of the configuration) with one instance, then
// the journal on with 1, 2 and 3 instances; last come
//
//	changelog throughput ratio with/without journal: X.XX
//	scale-out throughput 3/1 instances: X.XX
//	scale-out CPU per event 3/1 instances: X.XX
//
// Usage (from the repository root, after `make otelcol-dsh` and with KFAKE
// set by tools/build.sh): go run ./bench/scaleout -corpus DIR
package main

import (
	"bufio"
	"bytes"
	"cmp"
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
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
)

type options struct {
	corpus, otelcol, kfake string
	profile                string
	sets                   []string
	latency                time.Duration
	partitions             int
	rows, workers, runs    int
	instances              []int
}

func main() {
	var o options
	var instances string
	flag.StringVar(&o.corpus, "corpus", "", "a bench/gen session root (its manifest.json gives the expected turns)")
	flag.StringVar(&o.otelcol, "otelcol", "bin/otelcol-dsh", "the otelcol-dsh binary")
	flag.StringVar(&o.kfake, "kfake", os.Getenv("KFAKE"), "tools/kfake's binary")
	flag.DurationVar(&o.latency, "latency", 2*time.Millisecond, "how late the broker answers every request")
	flag.IntVar(&o.partitions, "partitions", 24, "partitions of the session topic")
	flag.IntVar(&o.rows, "rows", 20, "rows per HTTP request")
	flag.IntVar(&o.workers, "workers", 32, "concurrent posting workers")
	flag.IntVar(&o.runs, "runs", 3, "rounds of every configuration; the summary takes each one's median")
	flag.StringVar(&o.profile, "profile", "", "a directory: each turn-state instance saves a CPU profile of its run there")
	flag.Func("set", "a --set for the turn-state instances (repeatable), to try a setting", func(v string) error {
		o.sets = append(o.sets, "--set="+v)
		return nil
	})
	flag.StringVar(&instances, "instances", "1,2,3", "turn-state instance counts to run with the journal on")
	flag.Parse()
	if o.corpus == "" || o.kfake == "" {
		fmt.Fprintln(os.Stderr, "usage: scaleout -corpus DIR [-kfake BIN]; KFAKE comes from tools/build.sh")
		os.Exit(2)
	}
	for _, f := range strings.Split(instances, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 9 {
			fmt.Fprintf(os.Stderr, "scaleout: -instances: %q is not a count from 1 to 9\n", f)
			os.Exit(2)
		}
		o.instances = append(o.instances, n)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		os.Exit(1)
	}
}

type manifest struct {
	Rows, Events, Turns int64
}

// result is one run's figures.
type result struct {
	instances      int
	journal        bool
	wall           time.Duration
	cpu            time.Duration // the turn-state instances'
	idle           time.Duration // theirs over idleWindow before the load
	records, bytes float64       // changelog written
	rss            []int64       // peak, KiB, per instance
}

func run(o options) error {
	var m manifest
	b, err := os.ReadFile(filepath.Join(o.corpus, "manifest.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	sessions, err := readSessions(o.corpus)
	if err != nil {
		return err
	}
	fmt.Printf("# corpus %s: %d sessions, %d rows, %d events, %d turns; %d partitions, broker latency %s, %d rows per request, %d workers\n",
		o.corpus, len(sessions), m.Rows, m.Events, m.Turns, o.partitions, o.latency, o.rows, o.workers)
	plan := []result{{instances: 1}}
	for _, n := range o.instances {
		plan = append(plan, result{instances: n, journal: true})
	}
	runs := make([][]result, len(plan))
	for round := range o.runs {
		for i, p := range plan {
			r, err := once(o, m, sessions, p.instances, p.journal)
			if err != nil {
				return fmt.Errorf("%d instances, journal %v: %w", p.instances, p.journal, err)
			}
			runs[i] = append(runs[i], r)
			fmt.Printf("run %d: %s\n", round+1, r.line(m))
		}
	}
	// Each configuration's median run, by wall time.
	byKey := func(n int, journal bool) *result {
		for i, p := range plan {
			if p.instances == n && p.journal == journal {
				rs := slices.Clone(runs[i])
				slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.wall, b.wall) })
				return &rs[len(rs)/2]
			}
		}
		return nil
	}
	fmt.Printf("# medians of %d runs\n", o.runs)
	for _, p := range plan {
		fmt.Println(byKey(p.instances, p.journal).line(m))
	}
	if off, on := byKey(1, false), byKey(1, true); off != nil && on != nil {
		fmt.Printf("changelog throughput ratio with/without journal: %.2f\n", off.wall.Seconds()/on.wall.Seconds())
	}
	if one, three := byKey(1, true), byKey(3, true); one != nil && three != nil {
		fmt.Printf("scale-out throughput 3/1 instances: %.2f\n", one.wall.Seconds()/three.wall.Seconds())
		fmt.Printf("scale-out CPU per event 3/1 instances: %.2f\n", three.cpu.Seconds()/one.cpu.Seconds())
	}
	return nil
}

func (r result) line(m manifest) string {
	j := "off"
	if r.journal {
		j = "on "
	}
	ev := float64(m.Events)
	var rss []string
	for _, k := range r.rss {
		rss = append(rss, fmt.Sprintf("%d", k/1024))
	}
	idle := r.idle.Seconds() / idleWindow.Seconds() // cores
	busy := r.cpu.Seconds() - idle*r.wall.Seconds()
	return fmt.Sprintf("instances %d journal %s: %8.0f events/s  %6.2f CPU µs/event (%5.2f above idle; idle %.3f cores)  changelog %.3f records %.1f bytes/event  peak RSS MiB %s",
		r.instances, j, ev/r.wall.Seconds(), float64(r.cpu.Microseconds())/ev, busy*1e6/ev, idle, r.records/ev, r.bytes/ev, strings.Join(rss, " "))
}

// idleWindow is how long the instances' idle CPU time is measured.
const idleWindow = 5 * time.Second

type session struct {
	id   string
	rows [][]byte
}

// readSessions reads every session file of a bench/gen root; the session
// id is its directory's name.
func readSessions(root string) ([]session, error) {
	var out []session
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := session{id: filepath.Base(filepath.Dir(path))}
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				s.rows = append(s.rows, l)
			}
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// once runs the tier with n turn-state instances and posts the corpus.
func once(o options, m manifest, sessions []session, n int, journal bool) (result, error) {
	r := result{instances: n, journal: journal}
	dir, err := os.MkdirTemp("", "scaleout-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	var procs []*proc
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			stop(procs[i])
		}
	}()
	ports, err := freePorts(5 + 3*n) // kafka, sink, ingest http, health, telemetry; 3 per instance
	if err != nil {
		return r, err
	}
	brokers := fmt.Sprintf("127.0.0.1:%d", ports[0])
	kf, err := spawn(dir, "kfake", nil, o.kfake, "-port="+strconv.Itoa(ports[0]),
		"-partitions="+strconv.Itoa(o.partitions), "-latency="+o.latency.String())
	if err != nil {
		return r, err
	}
	procs = append(procs, kf)
	sink, err := traceSink(ports[1])
	if err != nil {
		return r, err
	}
	defer sink.Stop()

	config := "deploy/collector/kafka-turn-state.yaml"
	if !journal {
		if config, err = withoutChangelog(config, dir); err != nil {
			return r, err
		}
	}
	common := []string{"KAFKA_BROKERS=" + brokers, "TELEMETRY_HOST=127.0.0.1",
		"CHANGELOG_PARTITIONS=" + strconv.Itoa(o.partitions), "TRACES_OTLP_ENDPOINT=127.0.0.1:" + strconv.Itoa(ports[1])}
	type node struct {
		p    *proc
		self string
	}
	var nodes []node
	for i := range n {
		p := ports[5+3*i:]
		name := fmt.Sprintf("turn-state-%d", i)
		self := fmt.Sprintf("127.0.0.1:%d", p[2])
		cmd, err := spawn(dir, name, append([]string{
			"HOSTNAME=" + name, "HEALTH_ENDPOINT=127.0.0.1:" + strconv.Itoa(p[0]),
			"PROMETHEUS_ENDPOINT=127.0.0.1:" + strconv.Itoa(p[1]), "TELEMETRY_PORT=" + strconv.Itoa(p[2]),
			"STATE_DIR=" + filepath.Join(dir, name),
		}, common...), o.otelcol, append(append([]string{"--config=" + config}, o.sets...), profileArgs(o, name, n, journal)...)...)
		if err != nil {
			return r, err
		}
		procs = append(procs, cmd)
		nodes = append(nodes, node{cmd, self})
		if err := waitFor(60*time.Second, name+" healthy", func() error { return httpOK("http://127.0.0.1:" + strconv.Itoa(p[0]) + "/") }); err != nil {
			return r, err
		}
	}
	ingestHTTP := "127.0.0.1:" + strconv.Itoa(ports[2])
	ingestHealth := "127.0.0.1:" + strconv.Itoa(ports[3])
	ing, err := spawn(dir, "ingest", append([]string{
		"SESSION_EVENT_ENDPOINT=" + ingestHTTP, "HEALTH_ENDPOINT=" + ingestHealth,
		"STATE_DIR=" + filepath.Join(dir, "ingest"), "TELEMETRY_PORT=" + strconv.Itoa(ports[4]),
	}, common...), o.otelcol, "--config=deploy/collector/kafka-ingest.yaml")
	if err != nil {
		return r, err
	}
	procs = append(procs, ing)
	if err := waitFor(60*time.Second, "ingest healthy", func() error { return httpOK("http://" + ingestHealth + "/") }); err != nil {
		return r, err
	}
	// The group settles: every partition owned by one instance, each
	// instance owning some.
	if err := waitFor(120*time.Second, "partitions assigned", func() error {
		total := 0
		for _, nd := range nodes {
			owned := sumMetric(nd.self, partitionStart) - sumMetric(nd.self, partitionClose)
			if owned == 0 {
				return errors.New("an instance owns no partition")
			}
			total += int(owned)
		}
		if total != o.partitions {
			return fmt.Errorf("%d of %d partitions owned", total, o.partitions)
		}
		return nil
	}); err != nil {
		return r, err
	}

	// What the instances spend idle (heartbeats, fetch polls, the
	// changelog view's reads, sweeps), over a few seconds before the load.
	cpu0 := make([]time.Duration, n)
	for i, nd := range nodes {
		cpu0[i] = cpuTime(nd.p.pid())
	}
	time.Sleep(idleWindow)
	for i, nd := range nodes {
		c := cpuTime(nd.p.pid())
		r.idle += c - cpu0[i]
		cpu0[i] = c
	}
	start := time.Now()
	if err := postAll(ingestHTTP, sessions, o.rows, o.workers); err != nil {
		return r, err
	}
	if err := waitFor(20*time.Minute, "every turn closed", func() error {
		var closed float64
		for _, nd := range nodes {
			closed += sumMetric(nd.self, turnsClosed)
		}
		if int64(closed) < m.Turns {
			return fmt.Errorf("%d of %d turns closed", int64(closed), m.Turns)
		}
		return nil
	}); err != nil {
		return r, err
	}
	r.wall = time.Since(start)
	for i, nd := range nodes {
		r.cpu += cpuTime(nd.p.pid()) - cpu0[i]
		r.records += sumMetric(nd.self, changelogRecords)
		r.bytes += sumMetric(nd.self, changelogBytes)
		r.rss = append(r.rss, peakRSS(nd.p.pid()))
	}
	return r, nil
}

var (
	partitionStart   = regexp.MustCompile(`(?m)^otelcol_kafka_receiver_partition_start(?:_total)?(?:\{[^}]*\})? (\S+)`)
	partitionClose   = regexp.MustCompile(`(?m)^otelcol_kafka_receiver_partition_close(?:_total)?(?:\{[^}]*\})? (\S+)`)
	turnsClosed      = regexp.MustCompile(`(?m)^otelcol_connector_turn_state_turns_closed(?:_total)?(?:\{[^}]*\})? (\S+)`)
	changelogRecords = regexp.MustCompile(`(?m)^otelcol_connector_turn_state_changelog_records_written(?:_total)?(?:\{[^}]*\})? (\S+)`)
	changelogBytes   = regexp.MustCompile(`(?m)^otelcol_connector_turn_state_changelog_bytes_written(?:_total)?(?:\{[^}]*\})? (\S+)`)
)

// sumMetric sums the samples of one metric on a collector's telemetry
// endpoint (0 when it cannot be read).
func sumMetric(addr string, re *regexp.Regexp) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, m := range re.FindAllSubmatch(b, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		sum += v
	}
	return sum
}

// postAll posts every session's rows in order, requests of rows rows, the
// sessions shared among workers; a refused request (5xx) is sent again.
func postAll(addr string, sessions []session, rows, workers int) error {
	work := make(chan session)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: time.Minute}
	for range workers {
		wg.Go(func() {
			for s := range work {
				for i := 0; i < len(s.rows); i += rows {
					if err := post(hc, addr, s.id, bytes.Join(s.rows[i:min(i+rows, len(s.rows))], nil)); err != nil {
						errs <- err
						for range work {
						}
						return
					}
				}
			}
		})
	}
	for _, s := range sessions {
		work <- s
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func post(hc *http.Client, addr, id string, body []byte) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := hc.Post("http://"+addr+"/v1/sessions/"+id+"/events", "application/x-ndjson", bytes.NewReader(body))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				return nil
			}
			if resp.StatusCode < 500 {
				return fmt.Errorf("POST %s: HTTP %d", id, resp.StatusCode)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("POST %s: not accepted in 2m (%v)", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// withoutChangelog writes a copy of the turn-state configuration without
// turn_state's changelog (no journal) and returns its path.
func withoutChangelog(path, dir string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return "", err
	}
	conns, _ := cfg["connectors"].(map[string]any)
	ts, _ := conns["turn_state"].(map[string]any)
	if ts == nil {
		return "", fmt.Errorf("%s: no connectors::turn_state", path)
	}
	delete(ts, "changelog")
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "turn-state-no-journal.yaml")
	return p, os.WriteFile(p, out, 0o644)
}

// traceSink receives the traces exporter's spans over OTLP/gRPC.
func traceSink(port int) (*grpc.Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(s, &sinkServer{})
	go s.Serve(l)
	return s, nil
}

type sinkServer struct {
	ptraceotlp.UnimplementedGRPCServer
}

func (*sinkServer) Export(context.Context, ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	return ptraceotlp.NewExportResponse(), nil
}

// proc is a started process and the end of its Wait.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func spawn(dir, name string, env []string, bin string, args ...string) (*proc, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

func stop(p *proc) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(90 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

func waitFor(d time.Duration, what string, fn func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s: %w", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cpuTime is a process's user and system CPU time (/proc/PID/stat).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

// peakRSS is a process's peak resident set (VmHWM), KiB.
func peakRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			k, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return k
		}
	}
	return 0
}

// profileArgs has an instance save a CPU profile of its run (the pprof
// extension's save_to_file) in o.profile, if set.
func profileArgs(o options, name string, n int, journal bool) []string {
	if o.profile == "" {
		return nil
	}
	file := filepath.Join(o.profile, fmt.Sprintf("%s-of-%d-journal-%v.prof", name, n, journal))
	return []string{"--set=extensions::pprof::endpoint=127.0.0.1:0", "--set=extensions::pprof::save_to_file=" + file,
		"--set=service::extensions=[health_check,file_storage,pprof]"}
}
