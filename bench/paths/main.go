// Command paths measures the three ways session events reach turn_state, on
// one bench/gen corpus, with one downstream (the count exporter of
// otelcol-dsh-bench), interleaved in rounds (files, http, kafka, files, …):
//
//	files  one collector tailing the corpus: session_event (files) →
//	       [turn_state, count]; turn_state's traces and metrics → count
//	http   the same collector with session_event's HTTP source instead: every
//	       session's rows posted in order, -rows rows per request to
//	       /v1/sessions/{id}/events, by -workers concurrent clients
//	kafka  the two-tier deployment of deploy/collector on tools/kfake: the
//	       ingest tier (kafka-ingest.yaml as shipped) taking the same posts,
//	       and one turn-state instance (kafka-turn-state.yaml as shipped,
//	       the changelog journal on) whose exporters are replaced by count
//	       (its logs pipeline → [turn_state, count])
//
// Every process is started and settled (healthy; for kafka, the consumer
// group owns every partition) before its CPU time is read; the load then
// starts (files: the corpus is hard-linked into the watched directory), and
// the run ends when the count exporter has seen one log record per row of
// the corpus and every span of its closed turns. A run fails — and the
// command exits non-zero — when more than that is counted, when the HTTP
// source does not acknowledge every row as accepted exactly once, or when
// the count does not complete in time.
//
// Per path it prints the medians of CPU µs per event (all the path's
// processes: both tiers for kafka, not the broker), events/s (from the start
// of the load to the last item counted) and peak RSS (VmHWM; summed over the
// tiers), then
//
//	CPU per event, HTTP/files: X.XX
//	CPU per event, Kafka/files: X.XX
//
// Usage (bench/paths.sh builds what it needs): paths -dsh BIN -kfake BIN
// -corpus DIR [-runs 3] [-rows 100] [-workers 32] [-profile DIR]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/dshtrace/dshtrace/bench/internal/benchproc"
)

type options struct {
	dsh, kfake, corpus, profile string
	deploy                      string
	paths                       []string
	rows, workers, runs         int
	partitions                  int
	latency, timeout            time.Duration
}

func main() {
	var o options
	var paths string
	flag.StringVar(&o.dsh, "dsh", "", "the otelcol-dsh-bench binary (bench/build.sh)")
	flag.StringVar(&o.kfake, "kfake", os.Getenv("KFAKE"), "tools/kfake's binary")
	flag.StringVar(&o.corpus, "corpus", "", "a bench/gen session root")
	flag.StringVar(&o.deploy, "deploy", "deploy/collector", "where kafka-ingest.yaml and kafka-turn-state.yaml are")
	flag.StringVar(&o.profile, "profile", "", "a directory: every collector process saves a CPU profile of its run there")
	flag.StringVar(&paths, "paths", "files,http,kafka", "the paths to run, in each round's order")
	flag.IntVar(&o.rows, "rows", 100, "rows per HTTP request")
	flag.IntVar(&o.workers, "workers", 32, "concurrent HTTP clients")
	flag.IntVar(&o.runs, "runs", 3, "rounds; the summary takes each path's medians")
	flag.IntVar(&o.partitions, "partitions", 24, "partitions of the session topic (and the changelog)")
	flag.DurationVar(&o.latency, "latency", 2*time.Millisecond, "how late kfake answers every request")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "limit of one run")
	flag.Parse()
	o.paths = strings.Split(paths, ",")
	for _, p := range o.paths {
		if p != "files" && p != "http" && p != "kafka" {
			fmt.Fprintf(os.Stderr, "paths: -paths: %q is not files, http or kafka\n", p)
			os.Exit(2)
		}
	}
	if o.dsh == "" || o.corpus == "" || (slices.Contains(o.paths, "kafka") && o.kfake == "") {
		fmt.Fprintln(os.Stderr, "usage: paths -dsh BIN -corpus DIR [-kfake BIN]; bench/paths.sh runs it")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "paths: FAIL:", err)
		os.Exit(1)
	}
}

// manifest is the part of bench/gen's manifest.json read here.
type manifest struct {
	Files                      int
	Rows, Events, Turns, Spans int64
}

// result is one run of one path.
type result struct {
	path string
	wall time.Duration   // start of the load → last item counted
	cpu  time.Duration   // every process of the path, from settled to the end
	cpus []time.Duration // each process's part
	rss  []int64         // peak, KiB, per process
}

func (r result) cpuPerEvent(m manifest) float64 {
	return float64(r.cpu.Nanoseconds()) / 1e3 / float64(m.Events)
}

func (r result) rssMiB() float64 {
	var s int64
	for _, k := range r.rss {
		s += k
	}
	return float64(s) / 1024
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
	sessions, err := benchproc.ReadSessions(o.corpus)
	if err != nil {
		return err
	}
	if len(sessions) != m.Files {
		return fmt.Errorf("%s: %d session files, the manifest says %d", o.corpus, len(sessions), m.Files)
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	fmt.Printf("# corpus %s: %d sessions, %d rows, %d events, %d turns, %d spans\n", o.corpus, len(sessions), m.Rows, m.Events, m.Turns, m.Spans)
	fmt.Printf("# http: %d rows per request, %d clients; kafka: %d partitions, broker latency %s, journal on\n", o.rows, o.workers, o.partitions, o.latency)
	runs := map[string][]result{}
	for round := 1; round <= o.runs; round++ {
		for _, p := range o.paths {
			b := &bench{o: o, m: m, sessions: sessions, round: round}
			r, err := b.run(p)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", round, p, err)
			}
			runs[p] = append(runs[p], r)
			fmt.Printf("# round %d %-5s %8.0f events/s  %6.2f CPU µs/event (%s)  peak RSS %s MiB  load %s\n",
				round, p, float64(m.Events)/r.wall.Seconds(), r.cpuPerEvent(m), cpuList(r.cpus, m), rssList(r.rss), benchproc.LoadAvg())
		}
	}
	fmt.Println()
	fmt.Printf("%-6s %10s %13s %13s   %s\n", "path", "events/s", "CPU µs/event", "peak RSS MiB", fmt.Sprintf("(medians of %d rounds)", o.runs))
	med := map[string]float64{}
	for _, p := range o.paths {
		rs := runs[p]
		cpu := median(rs, func(r result) float64 { return r.cpuPerEvent(m) })
		eps := median(rs, func(r result) float64 { return float64(m.Events) / r.wall.Seconds() })
		rss := median(rs, result.rssMiB)
		note := ""
		if p == "kafka" {
			ing := median(rs, func(r result) float64 { return float64(r.cpus[0].Nanoseconds()) / 1e3 / float64(m.Events) })
			ts := median(rs, func(r result) float64 { return float64(r.cpus[1].Nanoseconds()) / 1e3 / float64(m.Events) })
			note = fmt.Sprintf("  ingest + turn-state: CPU µs/event %.2f + %.2f", ing, ts)
		}
		fmt.Printf("%-6s %10.0f %13.2f %13.1f%s\n", p, eps, cpu, rss, note)
		med[p] = cpu
	}
	fmt.Println()
	if f, ok := med["files"]; ok {
		if h, ok := med["http"]; ok {
			fmt.Printf("CPU per event, HTTP/files: %.2f\n", h/f)
		}
		if k, ok := med["kafka"]; ok {
			fmt.Printf("CPU per event, Kafka/files: %.2f\n", k/f)
		}
	}
	return nil
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func cpuList(c []time.Duration, m manifest) string {
	var s []string
	for _, v := range c {
		s = append(s, fmt.Sprintf("%.2f", float64(v.Nanoseconds())/1e3/float64(m.Events)))
	}
	return strings.Join(s, "+")
}

func rssList(k []int64) string {
	var s []string
	for _, v := range k {
		s = append(s, strconv.FormatInt(v/1024, 10))
	}
	return strings.Join(s, "+")
}

// bench is one run: its directory, its processes.
type bench struct {
	o        options
	m        manifest
	sessions []benchproc.Session
	round    int
	dir      string
	procs    []*benchproc.Proc
}

func (b *bench) run(path string) (r result, err error) {
	r.path = path
	if b.dir, err = os.MkdirTemp("", "dsh-paths-"); err != nil {
		return r, err
	}
	defer os.RemoveAll(b.dir)
	defer func() {
		if err != nil {
			for _, p := range b.procs {
				err = fmt.Errorf("%w\n---- %s log (last lines) ----\n%s", err, p.Name, p.Tail(15))
			}
		}
		for i := len(b.procs) - 1; i >= 0; i-- {
			b.procs[i].Stop(60 * time.Second)
		}
	}()
	switch path {
	case "files":
		return b.files()
	case "http":
		return b.http()
	default:
		return b.kafka()
	}
}

// collectors are the processes whose CPU and RSS a path counts.
func (b *bench) measure(collectors []*benchproc.Proc, load func() error, status string) (result, error) {
	var r result
	cpu0 := make([]time.Duration, len(collectors))
	for i, p := range collectors {
		cpu0[i] = benchproc.CPUTime(p.PID())
	}
	start := time.Now()
	if err := load(); err != nil {
		return r, err
	}
	last, err := b.counted(status)
	if err != nil {
		return r, err
	}
	r.wall = time.Unix(0, last).Sub(start)
	for i, p := range collectors {
		c := benchproc.CPUTime(p.PID()) - cpu0[i]
		r.cpu += c
		r.cpus = append(r.cpus, c)
		r.rss = append(r.rss, benchproc.StatusKB(p.PID(), "VmHWM"))
	}
	return r, nil
}

// status mirrors bench/countexporter.Status.
type status struct {
	LogRecords int64 `json:"log_records"`
	Spans      int64 `json:"spans"`
	LogsLast   int64 `json:"logs_last_unix_nano"`
	SpansLast  int64 `json:"spans_last_unix_nano"`
}

// counted waits until the count exporter's status file shows one log
// record per row and every span, and returns the time of the last item.
func (b *bench) counted(file string) (int64, error) {
	var s status
	err := benchproc.WaitFor(b.o.timeout, "every row and span counted", func() error {
		for _, p := range b.procs {
			if p.Exited() {
				return benchproc.Stop(fmt.Errorf("%s exited", p.Name))
			}
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if s.LogRecords > b.m.Rows || s.Spans > b.m.Spans {
			return benchproc.Stop(fmt.Errorf("counted more than sent: %d log records (rows %d), %d spans (want %d)", s.LogRecords, b.m.Rows, s.Spans, b.m.Spans))
		}
		if s.LogRecords != b.m.Rows || s.Spans != b.m.Spans {
			return fmt.Errorf("%d of %d log records, %d of %d spans", s.LogRecords, b.m.Rows, s.Spans, b.m.Spans)
		}
		return nil
	})
	return max(s.LogsLast, s.SpansLast), err
}

// post sends the corpus to the session_event HTTP source at addr and checks
// that every row was accepted once.
func (b *bench) post(addr string) error {
	acc, dup, err := benchproc.PostAll(addr, b.sessions, b.o.rows, b.o.workers)
	if err != nil {
		return err
	}
	if acc != b.m.Rows || dup != 0 {
		return fmt.Errorf("HTTP acknowledged %d rows accepted and %d duplicates; %d rows posted", acc, dup, b.m.Rows)
	}
	return nil
}

func (b *bench) spawn(name string, env []string, cfg map[string]any) (*benchproc.Proc, error) {
	if b.o.profile != "" {
		exts, _ := cfg["extensions"].(map[string]any)
		if exts == nil {
			exts = map[string]any{}
			cfg["extensions"] = exts
		}
		exts["pprof"] = map[string]any{"endpoint": "127.0.0.1:0",
			"save_to_file": filepath.Join(b.o.profile, fmt.Sprintf("%s-%s-%d.prof", b.pathName(name), name, b.round))}
		svc := cfg["service"].(map[string]any)
		list, _ := svc["extensions"].([]any)
		svc["extensions"] = append(list, "pprof")
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(b.dir, name+".yaml")
	if err := os.WriteFile(file, out, 0o644); err != nil {
		return nil, err
	}
	p, err := benchproc.Spawn(b.dir, name, env, b.o.dsh, "--config="+file)
	if err != nil {
		return nil, err
	}
	b.procs = append(b.procs, p)
	return p, nil
}

// pathName is the path a process name belongs to, for profile file names.
func (b *bench) pathName(name string) string {
	switch name {
	case "ingest", "turn-state":
		return "kafka"
	}
	return name
}

// single is the one-collector configuration of the files and http paths:
// source → [turn_state, count], turn_state → count.
func single(source map[string]any, health, statusFile string) map[string]any {
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(`
receivers:
  session_event: {}
connectors:
  turn_state: {}
exporters:
  count:
    interval: 50ms
extensions:
  health_check: {}
service:
  extensions: [health_check]
  telemetry:
    logs: {level: warn}
    metrics: {level: none}
  pipelines:
    logs: {receivers: [session_event], exporters: [turn_state, count]}
    traces: {receivers: [turn_state], exporters: [count]}
    metrics: {receivers: [turn_state], exporters: [count]}
`), &cfg); err != nil {
		panic(err)
	}
	cfg["receivers"].(map[string]any)["session_event"] = source
	cfg["exporters"].(map[string]any)["count"].(map[string]any)["status_file"] = statusFile
	cfg["extensions"].(map[string]any)["health_check"] = map[string]any{"endpoint": health}
	return cfg
}

func (b *bench) files() (result, error) {
	ports, err := benchproc.FreePorts(1)
	if err != nil {
		return result{}, err
	}
	root := filepath.Join(b.dir, "root")
	statusFile := filepath.Join(b.dir, "status.json")
	health := "127.0.0.1:" + strconv.Itoa(ports[0])
	p, err := b.spawn("files", nil, single(map[string]any{"files": map[string]any{
		"include": []string{filepath.Join(root, "**", "session*.jsonl")}, "start_at": "beginning", "poll_interval": "200ms",
	}}, health, statusFile))
	if err != nil {
		return result{}, err
	}
	if err := benchproc.WaitFor(60*time.Second, "healthy", func() error { return benchproc.HTTPOK("http://" + health + "/") }); err != nil {
		return result{}, err
	}
	return b.measure([]*benchproc.Proc{p}, func() error { return linkTree(b.o.corpus, root) }, statusFile)
}

// linkTree hard-links every session file of the corpus into root, the same
// layout: the tailer finds all of them at its next poll.
func linkTree(corpus, root string) error {
	tmp := root + ".tmp"
	err := filepath.WalkDir(corpus, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		rel, _ := filepath.Rel(corpus, path)
		dst := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Link(path, dst); err != nil {
			return copyFile(path, dst) // another file system
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.Rename(tmp, root)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func (b *bench) http() (result, error) {
	ports, err := benchproc.FreePorts(2)
	if err != nil {
		return result{}, err
	}
	statusFile := filepath.Join(b.dir, "status.json")
	health := "127.0.0.1:" + strconv.Itoa(ports[0])
	ingest := "127.0.0.1:" + strconv.Itoa(ports[1])
	p, err := b.spawn("http", nil, single(map[string]any{"http": map[string]any{"endpoint": ingest}}, health, statusFile))
	if err != nil {
		return result{}, err
	}
	if err := benchproc.WaitFor(60*time.Second, "healthy", func() error { return benchproc.HTTPOK("http://" + health + "/") }); err != nil {
		return result{}, err
	}
	return b.measure([]*benchproc.Proc{p}, func() error { return b.post(ingest) }, statusFile)
}

var partitionStart = benchproc.MetricRE("otelcol_kafka_receiver_partition_start")
var partitionClose = benchproc.MetricRE("otelcol_kafka_receiver_partition_close")

func (b *bench) kafka() (result, error) {
	var r result
	ports, err := benchproc.FreePorts(7) // kafka; ingest http, health, telemetry; turn-state health, telemetry, prometheus
	if err != nil {
		return r, err
	}
	port := func(i int) string { return strconv.Itoa(ports[i]) }
	kf, err := benchproc.Spawn(b.dir, "kfake", nil, b.o.kfake, "-port="+port(0),
		"-partitions="+strconv.Itoa(b.o.partitions), "-latency="+b.o.latency.String())
	if err != nil {
		return r, err
	}
	b.procs = append(b.procs, kf)
	common := []string{"KAFKA_BROKERS=127.0.0.1:" + port(0), "TELEMETRY_HOST=127.0.0.1",
		"CHANGELOG_PARTITIONS=" + strconv.Itoa(b.o.partitions), "KAFKA_PARTITIONS=" + strconv.Itoa(b.o.partitions)}

	statusFile := filepath.Join(b.dir, "status.json")
	ts, err := b.deployConfig("kafka-turn-state.yaml")
	if err != nil {
		return r, err
	}
	// The shipped turn-state tier with every exporter replaced by count, and
	// the records themselves counted too.
	ts["exporters"] = map[string]any{"count": map[string]any{"status_file": statusFile, "interval": "50ms"}}
	pl := ts["service"].(map[string]any)["pipelines"].(map[string]any)
	pl["logs"].(map[string]any)["exporters"] = []any{"turn_state", "count"}
	pl["traces"].(map[string]any)["exporters"] = []any{"count"}
	pl["metrics"].(map[string]any)["exporters"] = []any{"count"}
	tsTelemetry := "127.0.0.1:" + port(5)
	turnState, err := b.spawn("turn-state", append([]string{"HOSTNAME=turn-state-0",
		"HEALTH_ENDPOINT=127.0.0.1:" + port(4), "TELEMETRY_PORT=" + port(5), "PROMETHEUS_ENDPOINT=127.0.0.1:" + port(6),
		"STATE_DIR=" + filepath.Join(b.dir, "turn-state")}, common...), ts)
	if err != nil {
		return r, err
	}
	ing, err := b.deployConfig("kafka-ingest.yaml")
	if err != nil {
		return r, err
	}
	ingestHTTP := "127.0.0.1:" + port(1)
	ingest, err := b.spawn("ingest", append([]string{"SESSION_EVENT_ENDPOINT=" + ingestHTTP,
		"HEALTH_ENDPOINT=127.0.0.1:" + port(2), "TELEMETRY_PORT=" + port(3),
		"STATE_DIR=" + filepath.Join(b.dir, "ingest")}, common...), ing)
	if err != nil {
		return r, err
	}
	for _, h := range []string{port(4), port(2)} {
		if err := benchproc.WaitFor(60*time.Second, "healthy", func() error { return benchproc.HTTPOK("http://127.0.0.1:" + h + "/") }); err != nil {
			return r, err
		}
	}
	if err := benchproc.WaitFor(120*time.Second, "every partition owned", func() error {
		owned := benchproc.SumMetric(tsTelemetry, partitionStart) - benchproc.SumMetric(tsTelemetry, partitionClose)
		if int(owned) != b.o.partitions {
			return fmt.Errorf("%d of %d partitions owned", int(owned), b.o.partitions)
		}
		return nil
	}); err != nil {
		return r, err
	}
	return b.measure([]*benchproc.Proc{ingest, turnState}, func() error { return b.post(ingestHTTP) }, statusFile)
}

func (b *bench) deployConfig(name string) (map[string]any, error) {
	raw, err := os.ReadFile(filepath.Join(b.o.deploy, name))
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}
