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
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/bench/internal/benchproc"
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
	sessions, err := benchproc.ReadSessions(o.corpus)
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

// once runs the tier with n turn-state instances and posts the corpus.
func once(o options, m manifest, sessions []benchproc.Session, n int, journal bool) (result, error) {
	r := result{instances: n, journal: journal}
	dir, err := os.MkdirTemp("", "scaleout-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	var procs []*benchproc.Proc
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(90 * time.Second)
		}
	}()
	ports, err := benchproc.FreePorts(5 + 3*n) // kafka, sink, ingest http, health, telemetry; 3 per instance
	if err != nil {
		return r, err
	}
	brokers := fmt.Sprintf("127.0.0.1:%d", ports[0])
	kf, err := benchproc.Spawn(dir, "kfake", nil, o.kfake, "-port="+strconv.Itoa(ports[0]),
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
		"CHANGELOG_PARTITIONS=" + strconv.Itoa(o.partitions), "KAFKA_PARTITIONS=" + strconv.Itoa(o.partitions), "TRACES_OTLP_ENDPOINT=127.0.0.1:" + strconv.Itoa(ports[1])}
	type node struct {
		p    *benchproc.Proc
		self string
	}
	var nodes []node
	for i := range n {
		p := ports[5+3*i:]
		name := fmt.Sprintf("turn-state-%d", i)
		self := fmt.Sprintf("127.0.0.1:%d", p[2])
		cmd, err := benchproc.Spawn(dir, name, append([]string{
			"HOSTNAME=" + name, "HEALTH_ENDPOINT=127.0.0.1:" + strconv.Itoa(p[0]),
			"PROMETHEUS_ENDPOINT=127.0.0.1:" + strconv.Itoa(p[1]), "TELEMETRY_PORT=" + strconv.Itoa(p[2]),
			"STATE_DIR=" + filepath.Join(dir, name),
		}, common...), o.otelcol, append(append([]string{"--config=" + config}, o.sets...), profileArgs(o, name, n, journal)...)...)
		if err != nil {
			return r, err
		}
		procs = append(procs, cmd)
		nodes = append(nodes, node{cmd, self})
		if err := benchproc.WaitFor(60*time.Second, name+" healthy", func() error { return benchproc.HTTPOK("http://127.0.0.1:" + strconv.Itoa(p[0]) + "/") }); err != nil {
			return r, err
		}
	}
	ingestHTTP := "127.0.0.1:" + strconv.Itoa(ports[2])
	ingestHealth := "127.0.0.1:" + strconv.Itoa(ports[3])
	ing, err := benchproc.Spawn(dir, "ingest", append([]string{
		"SESSION_EVENT_ENDPOINT=" + ingestHTTP, "HEALTH_ENDPOINT=" + ingestHealth,
		"STATE_DIR=" + filepath.Join(dir, "ingest"), "TELEMETRY_PORT=" + strconv.Itoa(ports[4]),
	}, common...), o.otelcol, "--config=deploy/collector/kafka-ingest.yaml")
	if err != nil {
		return r, err
	}
	procs = append(procs, ing)
	if err := benchproc.WaitFor(60*time.Second, "ingest healthy", func() error { return benchproc.HTTPOK("http://" + ingestHealth + "/") }); err != nil {
		return r, err
	}
	// The group settles: every partition owned by one instance, each
	// instance owning some.
	if err := benchproc.WaitFor(120*time.Second, "partitions assigned", func() error {
		total := 0
		for _, nd := range nodes {
			owned := benchproc.SumMetric(nd.self, partitionStart) - benchproc.SumMetric(nd.self, partitionClose)
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
		cpu0[i] = benchproc.CPUTime(nd.p.PID())
	}
	time.Sleep(idleWindow)
	for i, nd := range nodes {
		c := benchproc.CPUTime(nd.p.PID())
		r.idle += c - cpu0[i]
		cpu0[i] = c
	}
	start := time.Now()
	if _, _, err := benchproc.PostAll(ingestHTTP, sessions, o.rows, o.workers); err != nil {
		return r, err
	}
	if err := benchproc.WaitFor(20*time.Minute, "every turn closed", func() error {
		var closed float64
		for _, nd := range nodes {
			closed += benchproc.SumMetric(nd.self, turnsClosed)
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
		r.cpu += benchproc.CPUTime(nd.p.PID()) - cpu0[i]
		r.records += benchproc.SumMetric(nd.self, changelogRecords)
		r.bytes += benchproc.SumMetric(nd.self, changelogBytes)
		r.rss = append(r.rss, benchproc.StatusKB(nd.p.PID(), "VmHWM"))
	}
	return r, nil
}

var (
	partitionStart   = benchproc.MetricRE("otelcol_kafka_receiver_partition_start")
	partitionClose   = benchproc.MetricRE("otelcol_kafka_receiver_partition_close")
	turnsClosed      = benchproc.MetricRE("otelcol_connector_turn_state_turns_closed")
	changelogRecords = benchproc.MetricRE("otelcol_connector_turn_state_changelog_records_written")
	changelogBytes   = benchproc.MetricRE("otelcol_connector_turn_state_changelog_bytes_written")
)

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

// profileArgs has an instance save a CPU profile of its run (the pprof
// extension's save_to_file) in o.profile, if set.
func profileArgs(o options, name string, n int, journal bool) []string {
	if o.profile == "" {
		return nil
	}
	file := filepath.Join(o.profile, fmt.Sprintf("%s-of-%d-journal-%v.prof", name, n, journal))
	return []string{"--set=extensions::pprof::endpoint=127.0.0.1:0", "--set=extensions::pprof::save_to_file=" + file,
		"--set=service::extensions=[health_check,file_storage,dsh_encoding,pprof]"} // the shipped list and pprof
}
