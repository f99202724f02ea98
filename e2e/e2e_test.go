//go:build e2e

// Package e2e runs the built otelcol-dsh distribution against real Jaeger v2
// and Prometheus 3 on loopback ports picked at run time: it posts corpus sessions over HTTP and
// has others tailed from a dsh root, then asserts through Jaeger's query API
// the exact span tree of every turn and through Prometheus's query API the
// turn, token and tool metrics, lints the scrape with promtool, and runs every
// PromQL expression of the deploy kit's dashboard and rules against the real
// Prometheus.
//
// Every scenario starts its collectors from a configuration file
// (testdata/collector, or a shipped one of deploy/collector) through one
// harness (harness_test.go: ports, placeholders, runs and their logs) and
// receives what they export in one OTLP sink type (sink_test.go).
//
// Run it with `make e2e`, which builds the tools once (tools/build.sh) and the
// distribution, and sets JAEGER, PROMETHEUS, PROMTOOL and OTELCOL_DSH.
package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
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

	"github.com/klauspost/compress/zstd"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// exporterJob is testdata/prometheus.yaml's job of the turn metrics.
const exporterJob = "otelcol-dsh"

const toolsHint = "run `make e2e` (it builds the tools with tools/build.sh and sets the variable)"

// TestEndToEnd runs the suite's collector (testdata/collector/suite.yaml)
// between Jaeger and Prometheus on the corpus: sessions tailed from a dsh
// root (one of them growing live) and posted in every encoding and line
// wrapper. Judged: the receiver's answers (accepted, idempotent, a bad line
// refused whole); every turn's trace in Jaeger span by span against the
// turn engine, and the hand-written span trees; every expected series in
// Prometheus and the hand-checked facts behind them; promtool's lint of
// both metrics endpoints; exemplars that link to a turn's trace; every
// dashboard expression and rule healthy on real series; a clean stop.
func TestEndToEnd(t *testing.T) {
	promtool := lookPath(t, "PROMTOOL", toolsHint)
	ss := load(t, testcorpus.Dir(t))
	want := expect(t, ss)
	ctx := context.Background()

	dir := t.TempDir()
	j := newJaegerPorts(t)
	c := newCollector(t, dir, testConfig("suite")).toJaeger(j)
	dshRoot := c.sessions()
	var live session
	var tailRows int
	for _, s := range ss {
		switch s.via {
		case viaTail:
			writeSession(t, dshRoot, s.id, s.body)
			tailRows += rows(s.body)
		case viaTailLive:
			live = s
		}
	}
	// The live file starts with its first half, cut inside a line: the
	// tailer must wait for the newline.
	cut := bytes.IndexByte(live.body[len(live.body)/2:], '\n') + len(live.body)/2 + 1
	firstHalf := live.body[:cut+20]
	writeSession(t, dshRoot, live.id, firstHalf)
	tailRows += rows(live.body[:cut])

	jaeger := startJaeger(t, dir, "jaeger", j)
	otelcol := c.start("otelcol-dsh")
	prom := startPrometheus(t, dir, c)
	procs := []*process{jaeger, otelcol, prom.process}

	e := &endToEnd{ctx: ctx, ss: ss, want: want, col: c, jaeger: j.query(), prom: prom.url, procs: procs,
		tailRows: tailRows, live: live, firstHalf: firstHalf, dshRoot: dshRoot, promtool: promtool}
	t.Run("ingest", e.ingest)
	t.Run("traces", e.traces)
	t.Run("span trees", e.spanTrees)
	t.Run("metrics", e.metrics)
	t.Run("promtool check metrics", e.promtoolCheckMetrics)
	t.Run("exemplars", e.exemplars)
	t.Run("dashboard queries", e.dashboardQueries)
	t.Run("rules", e.rules)

	// A clean stop: every process exits on SIGTERM within its grace time.
	for _, p := range []*process{prom.process, otelcol, jaeger} {
		if err := p.stop(15 * time.Second); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
	if strings.Contains(otelcol.output(), "panic:") {
		t.Errorf("otelcol-dsh panicked:\n%s", otelcol.tail(60))
	}
}

// endToEnd is one run of TestEndToEnd: the sessions fed, what they must
// give, the processes, and what the steps share.
type endToEnd struct {
	ctx       context.Context
	ss        []session
	want      expectation
	col       *collector
	jaeger    string // Jaeger's query API
	prom      string // Prometheus's API
	procs     []*process
	tailRows  int
	live      session
	firstHalf []byte
	dshRoot   string
	promtool  string
}

// ingest feeds every session — the tailed files present at the start, the posts in
// each encoding and line wrapper, the live file's second half — and checks the
// receiver's answers: accepted, idempotent, a bad line refused whole.
func (e *endToEnd) ingest(t *testing.T) {
	ctx, ss, procs, tailRows, live, firstHalf, dshRoot := e.ctx, e.ss, e.procs, e.tailRows, e.live, e.firstHalf, e.dshRoot
	// Everything present before the start (and the complete lines of the
	// live file) is read from the beginning.
	poll(t, "tailed rows accepted", 30*time.Second, func() error {
		n, err := e.col.accepted(ctx)
		if err == nil && n != float64(tailRows) {
			err = fmt.Errorf("accepted %v log records, want %d", n, tailRows)
		}
		return err
	}, procs...)

	for _, s := range ss {
		switch s.via {
		case viaPost, viaPostGzip, viaPostZstd:
			res := post(t, e.col.ingestURL()+"/v1/sessions/"+s.id+"/events", s.via, s.body)
			if res.code != http.StatusAccepted || res.Accepted == 0 || res.Duplicates != 0 {
				t.Errorf("%s: HTTP %d %s; want 202 with rows accepted and no duplicates", s.file, res.code, res.raw)
			}
		case viaWire:
			res := post(t, e.col.ingestURL()+"/v1/session-events", s.via, s.body)
			if res.code != http.StatusAccepted || res.Accepted == 0 {
				t.Errorf("%s: HTTP %d %s; want 202 with rows accepted", s.file, res.code, res.raw)
			}
		}
	}
	// Re-posting is idempotent: everything is a duplicate, nothing is
	// emitted again (the metrics below would count it twice).
	again := ss[0]
	res := post(t, e.col.ingestURL()+"/v1/sessions/"+again.id+"/events", viaPost, again.body)
	if res.code != http.StatusAccepted || res.Accepted != 0 || res.Duplicates == 0 {
		t.Errorf("re-post of %s: HTTP %d %s; want 202, all duplicates", again.file, res.code, res.raw)
	}
	// A bad line rejects the whole request, naming the line.
	bad := append([]byte(strings.SplitAfter(string(ss[1].body), "\n")[0]), []byte("{not json\n")...)
	res = post(t, e.col.ingestURL()+"/v1/sessions/e2e-rejected/events", viaPost, bad)
	if res.code != http.StatusBadRequest || !strings.Contains(res.raw, `"line"`) {
		t.Errorf("bad body: HTTP %d %s; want 400 naming the line", res.code, res.raw)
	}

	// The live file gets the rest of its bytes.
	appendFile(t, filepath.Join(dshRoot, "--e2e--", live.id, "session.jsonl"), live.body[len(firstHalf):])
}

// traces checks every expected turn's trace in Jaeger, span by span.
func (e *endToEnd) traces(t *testing.T) {
	ctx, want, procs := e.ctx, e.want, e.procs
	for _, turn := range want.turns {
		wantTD := traceOf(turn)
		id := turnrender.TraceID(turn.SessionID, turn.Number)
		name := fmt.Sprintf("%s/turn-%d", turn.SessionID, turn.Number)
		var diffs []string
		poll(t, name+" in Jaeger", 60*time.Second, func() error {
			got, err := jaegerTrace(ctx, e.jaeger, id)
			if err != nil {
				return err
			}
			if got.SpanCount() < wantTD.SpanCount() {
				return fmt.Errorf("%d of %d spans stored", got.SpanCount(), wantTD.SpanCount())
			}
			diffs = compareTrace(wantTD, got)
			return nil
		}, procs...)
		for _, d := range diffs {
			t.Errorf("%s (trace %s): %s", name, id, d)
		}
	}
	services, err := jaegerServices(ctx, e.jaeger)
	if err != nil || !contains(services, turnengine.DefaultAgentName) {
		t.Errorf("Jaeger services %v (%v): want the agent %q among them", services, err, turnengine.DefaultAgentName)
	}
}

// spanTrees checks the hand-written span trees of chosen turns.
func (e *endToEnd) spanTrees(t *testing.T) {
	ctx := e.ctx
	for _, o := range outlines {
		id := turnrender.TraceID(o.session, o.turn)
		got, err := jaegerTrace(ctx, e.jaeger, id)
		if err != nil {
			t.Errorf("%s turn %d: %v", o.session, o.turn, err)
			continue
		}
		if g := outline(got); g != o.tree {
			t.Errorf("%s turn %d: span tree\n%s\nwant\n%s", o.session, o.turn, g, o.tree)
		}
	}
}

// awaitSeries waits up to a minute for Prometheus to hold exactly the
// series want (from the exporter's job), and returns what still differs.
func awaitSeries(t *testing.T, ctx context.Context, prom string, want map[string]float64) []string {
	t.Helper()
	var diffs []string
	for deadline := time.Now().Add(60 * time.Second); ; {
		got, err := storedSeries(ctx, prom, exporterJob, want)
		if err != nil {
			t.Fatal(err)
		}
		if diffs = diffSeries(want, got); len(diffs) == 0 || time.Now().After(deadline) {
			return diffs
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// metrics checks every expected series in Prometheus, and the hand-checked facts
// behind the numbers.
func (e *endToEnd) metrics(t *testing.T) {
	ctx, want := e.ctx, e.want
	diffs := awaitSeries(t, ctx, e.prom, expectedSeries(want.metrics))
	for _, d := range diffs {
		t.Error(d)
	}
	// The hand-checked facts behind the numbers.
	for expr, min := range map[string]float64{
		`sum(dsh_turns_total{dsh_turn_end_reason="error"})`:       2,
		`sum(dsh_turns_total{dsh_turn_end_reason="aborted"})`:     2,
		`sum(dsh_turns_total{dsh_turn_end_reason="max-tokens"})`:  2,
		`sum(dsh_turns_total{dsh_turn_end_reason="interrupted"})`: 1,
		`sum(dsh_turns_total{dsh_turn_end_reason="dangling"})`:    1,
		`sum(dsh_tool_calls_total{dsh_tool_outcome="error"})`:     1,
		`sum(dsh_usage_tokens_total{gen_ai_token_type="output"})`: 1,
		`sum(dsh_turns_open)`: 0,
	} {
		res, err := promQuery(ctx, e.prom, expr)
		if err != nil || len(res) != 1 || res[0].value < min || (min == 0 && res[0].value != 0) {
			t.Errorf("%s = %v (%v), want ≥ %v", expr, res, err, min)
		}
	}
}

// promtoolCheckMetrics lints both metrics endpoints with promtool.
func (e *endToEnd) promtoolCheckMetrics(t *testing.T) {
	ctx, promtool := e.ctx, e.promtool
	for _, c := range []struct {
		url  string
		args []string
	}{
		{e.col.metricsURL(), []string{"check", "metrics"}},                           // full lint: names, units, help
		{e.col.selfURL(), []string{"check", "metrics", "--extended", "--lint=none"}}, // v0.165 self-metrics have no _total by design
	} {
		code, body, err := get(ctx, c.url)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET %s: %d %v", c.url, code, err)
		}
		cmd := exec.Command(promtool, c.args...)
		cmd.Stdin = bytes.NewReader(body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s < %s: %v\n%s", strings.Join(c.args, " "), c.url, err, out)
		}
	}
}

// exemplars checks that the histograms' exemplars link to a probe turn's trace.
func (e *endToEnd) exemplars(t *testing.T) {
	ctx, procs := e.ctx, e.procs
	// Histograms carry the trace and span id of what they measured, as
	// exemplars of the flush after the turn closed. A probe session with
	// current timestamps, posted once Prometheus scrapes, must leave its
	// trace id in Prometheus's exemplar storage (replayed corpus times
	// are older than what a series already holds, and Prometheus drops
	// out-of-order exemplars).
	poll(t, "first scrape", 30*time.Second, returnsSeries(ctx, e.prom, `up{job="otelcol-dsh"} == 1`), procs...)
	const probe = "e2e-exemplar-probe"
	res := post(t, e.col.ingestURL()+"/v1/sessions/"+probe+"/events", viaPost, shiftTimes(t, "../testdata/seed/sample.jsonl", time.Now()))
	if res.code != http.StatusAccepted {
		t.Fatalf("probe: HTTP %d %s", res.code, res.raw)
	}
	trace := turnrender.TraceID(probe, 1)
	poll(t, "probe trace in Jaeger", 30*time.Second, func() error {
		_, err := jaegerTrace(ctx, e.jaeger, trace)
		return err
	}, procs...)
	for _, m := range []string{"dsh_turn_duration_seconds_bucket", "gen_ai_client_inference_duration_seconds_bucket", "gen_ai_execute_tool_duration_seconds_bucket", "gen_ai_invoke_agent_duration_seconds_bucket"} {
		poll(t, m+" exemplar of the probe turn", 30*time.Second, func() error {
			return exemplarLinksTo(ctx, e.prom, m, trace.String())
		}, procs...)
	}
}

// dashboardQueries checks that every dashboard expression returns series and each of
// its selectors selects some.
func (e *endToEnd) dashboardQueries(t *testing.T) {
	ctx, procs := e.ctx, e.procs
	// The late-closed panel needs a turn that dangled and was ended
	// later: a crash-repaired session, cut mid-turn, left past the
	// dangling timeout (3s), then given dsh's repair.
	lateCloseAfterDangling(t, ctx, e.col.ingestURL(), e.jaeger, e.prom, procs)
	exprs, err := dashboardExprs(filepath.Join("..", "deploy", "grafana", "dshtrace-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions in the dashboard", len(exprs))
	}
	for _, expr := range exprs {
		poll(t, "dashboard: "+expr, 30*time.Second, returnsSeries(ctx, e.prom, expr), procs...)
		poll(t, "dashboard selectors: "+expr, 30*time.Second, selectsSeries(ctx, e.prom, expr), procs...)
	}
}

// rules checks that every recording and alerting rule evaluates healthy on real
// series.
func (e *endToEnd) rules(t *testing.T) {
	ctx, procs := e.ctx, e.procs
	var rules []rule
	start := time.Now()
	poll(t, "every rule evaluated healthy", 30*time.Second, func() error {
		var err error
		if rules, err = promRules(ctx, e.prom); err != nil {
			return err
		}
		if len(rules) < 15 {
			return fmt.Errorf("%d rules loaded", len(rules))
		}
		for _, r := range rules {
			if r.Health != "ok" || r.LastEvaluation.Before(start) {
				return fmt.Errorf("rule %s: health %q %s, last evaluated %v", r.Name, r.Health, r.LastError, r.LastEvaluation)
			}
		}
		return nil
	}, procs...)
	for _, r := range rules {
		q := r.Query
		if r.Type == "alerting" {
			if _, err := promQuery(ctx, e.prom, q); err != nil {
				t.Errorf("alert %s: %v", r.Name, err)
			}
			q = withBool(q)
		}
		poll(t, r.Type+" rule "+r.Name+": "+q, 30*time.Second, returnsSeries(ctx, e.prom, q), procs...)
		poll(t, r.Type+" rule "+r.Name+" selectors", 30*time.Second, selectsSeries(ctx, e.prom, r.Query), procs...)
		if r.Type == "recording" {
			poll(t, "recorded series "+r.Name, 30*time.Second, returnsSeries(ctx, e.prom, r.Name), procs...)
		}
	}
}

// writeSession puts a session file in the dsh layout under root.
func writeSession(t *testing.T, root, id string, body []byte) {
	t.Helper()
	d := filepath.Join(root, "--e2e--", id)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "session.jsonl"), body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// rows counts the complete non-empty lines of b.
func rows(b []byte) int {
	n := 0
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if bytes.HasSuffix(l, []byte("\n")) && len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

// postResult is the receiver's answer to a post.
type postResult struct {
	code                 int
	raw                  string
	Accepted, Duplicates int
}

// post sends body as NDJSON, compressed as via says.
func post(t *testing.T, url, via string, body []byte) postResult {
	t.Helper()
	var buf bytes.Buffer
	enc := ""
	switch via {
	case viaPostGzip:
		enc = "gzip"
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
	case viaPostZstd:
		enc = "zstd"
		zw, _ := zstd.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
	default:
		buf.Write(body)
	}
	req, err := http.NewRequest(http.MethodPost, url, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	r := postResult{code: resp.StatusCode, raw: strings.TrimSpace(b.String())}
	_ = json.Unmarshal(b.Bytes(), &r)
	return r
}

var sessionEventReceiver = regexp.MustCompile(`(^|,)receiver="session_event(/[^"]*)?"`)

var acceptedLine = regexp.MustCompile(`(?m)^otelcol_receiver_accepted_log_records(?:_total)?\{([^}]*)\} (\S+)`)

// acceptedFrom sums the self-metric of log records accepted by the
// session_event receivers (all instances) on a collector's telemetry
// endpoint.
func acceptedFrom(ctx context.Context, url string) (float64, error) {
	code, body, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("self-telemetry: HTTP %d", code)
	}
	var sum float64
	for _, m := range acceptedLine.FindAllStringSubmatch(string(body), -1) {
		if sessionEventReceiver.MatchString(m[1]) {
			v, _ := strconv.ParseFloat(m[2], 64)
			sum += v
		}
	}
	return sum, nil
}

// returnsSeries is a poll check: expr parses and returns at least one
// series in the Prometheus at base.
func returnsSeries(ctx context.Context, base, expr string) func() error {
	return func() error {
		res, err := promQuery(ctx, base, expr)
		if err != nil {
			return err
		}
		if len(res) == 0 {
			return errEmpty
		}
		return nil
	}
}

// exemplarLinksTo checks that the Prometheus at base stored an exemplar of
// a histogram that names the trace (and a span in it).
func exemplarLinksTo(ctx context.Context, base, metric, trace string) error {
	u := fmt.Sprintf("%s/api/v1/query_exemplars?query=%s&start=0&end=%d", base, metric, time.Now().Add(time.Hour).Unix())
	code, body, err := get(ctx, u)
	if err != nil {
		return err
	}
	var r struct {
		Status string `json:"status"`
		Data   []struct {
			Exemplars []struct {
				Labels map[string]string `json:"labels"`
			} `json:"exemplars"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" {
		return fmt.Errorf("query_exemplars: HTTP %d %v %s", code, err, body)
	}
	n := 0
	for _, s := range r.Data {
		for _, e := range s.Exemplars {
			n++
			if e.Labels["trace_id"] == trace && e.Labels["span_id"] != "" {
				return nil
			}
		}
	}
	return fmt.Errorf("%d exemplars, none with trace_id %s", n, trace)
}

var timeField = regexp.MustCompile(`"time":(\d+)`)

// shiftTimes reads a session log and moves its event times so that the
// first one is now.
func shiftTimes(t *testing.T, path string, now time.Time) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := timeField.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no event time", path)
	}
	first, _ := strconv.ParseInt(string(m[1]), 10, 64)
	offset := now.UnixMilli() - first
	return timeField.ReplaceAllFunc(b, func(f []byte) []byte {
		v, _ := strconv.ParseInt(string(timeField.FindSubmatch(f)[1]), 10, 64)
		return []byte(`"time":` + strconv.FormatInt(v+offset, 10))
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
