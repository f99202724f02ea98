//go:build e2e

package e2e

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The harness: every scenario starts otelcol-dsh from a configuration file —
// one of testdata/collector, or a shipped one of deploy/collector — whose
// ${env:NAME} placeholders the harness fills through the process's
// environment (the collector expands them itself). Both kinds of file use
// the shipped files' names for the same things, so one set of variables
// serves all:
//
//	HEALTH_ENDPOINT, SESSION_EVENT_ENDPOINT, OTLP_GRPC_ENDPOINT,
//	OTLP_HTTP_ENDPOINT, PROMETHEUS_ENDPOINT, AGENTS_ENDPOINT,
//	UPLOADS_ENDPOINT, PPROF_ENDPOINT   a free loopback address each
//	TELEMETRY_HOST, TELEMETRY_PORT     the self-telemetry, loopback, a free port
//	STATE_DIR, DSH_SESSIONS            <dir>/state, <dir>/sessions
//	TRACES_OTLP_ENDPOINT               a Jaeger's OTLP gRPC address (toJaeger)
//	  and JAEGER_OTLP_ENDPOINT
//	SINK_ENDPOINT                      the test's OTLP sink (toSink)
//
// Ports are picked when the collector is prepared and kept across its runs
// (a restart listens where the first run did), so scenarios never share
// one. A placeholder without a default that nothing sets fails the test
// before the start.

// addressVars are the placeholders that hold a listen address.
var addressVars = []string{"HEALTH_ENDPOINT", "SESSION_EVENT_ENDPOINT", "OTLP_GRPC_ENDPOINT", "OTLP_HTTP_ENDPOINT",
	"PROMETHEUS_ENDPOINT", "AGENTS_ENDPOINT", "UPLOADS_ENDPOINT", "PPROF_ENDPOINT"}

// testConfig is the path of testdata/collector/<name>.yaml.
func testConfig(name string) string { return filepath.Join("testdata", "collector", name+".yaml") }

// shippedConfig is the path of deploy/collector/<name>.yaml.
func shippedConfig(name string) string {
	return filepath.Join("..", "deploy", "collector", name+".yaml")
}

// collector is one otelcol-dsh under test: its configuration files (merged
// in order, as the collector merges repeated --config), further arguments,
// and the variables that fill the files' placeholders; each start is a run
// (a process) of it.
type collector struct {
	t       *testing.T
	dir     string
	configs []string
	args    []string
	env     map[string]string
	user    *syscall.Credential // nil: the test's own
}

// newCollector prepares otelcol-dsh on configs with its files under dir:
// every placeholder of the files that the harness knows gets its value.
func newCollector(t *testing.T, dir string, configs ...string) *collector {
	t.Helper()
	c := &collector{t: t, dir: dir, configs: configs, env: map[string]string{}}
	used := c.placeholders()
	var need []string
	for _, v := range append(slices.Clone(addressVars), "TELEMETRY_PORT") {
		if _, ok := used[v]; ok {
			need = append(need, v)
		}
	}
	for i, a := range freeAddrs(t, len(need)) {
		c.env[need[i]] = a
	}
	if _, ok := used["TELEMETRY_PORT"]; ok {
		c.env["TELEMETRY_HOST"] = "127.0.0.1"
		c.env["TELEMETRY_PORT"] = addrPort(c.env["TELEMETRY_PORT"])
	}
	if _, ok := used["STATE_DIR"]; ok {
		c.env["STATE_DIR"] = filepath.Join(dir, "state")
	}
	if _, ok := used["DSH_SESSIONS"]; ok {
		c.env["DSH_SESSIONS"] = filepath.Join(dir, "sessions")
	}
	return c
}

// set gives a placeholder a value (or a variable to the process).
func (c *collector) set(name, value string) *collector {
	c.env[name] = value
	return c
}

// with adds command-line arguments (--set=…) to every run.
func (c *collector) with(args ...string) *collector {
	c.args = append(c.args, args...)
	return c
}

// toJaeger points TRACES_OTLP_ENDPOINT (JAEGER_OTLP_ENDPOINT in
// deploy/collector/jaeger.yaml and redact-content.yaml) at a Jaeger's OTLP
// gRPC receiver.
func (c *collector) toJaeger(j jaegerPorts) *collector {
	return c.set("TRACES_OTLP_ENDPOINT", j.otlpGRPCAddr()).set("JAEGER_OTLP_ENDPOINT", j.otlpGRPCAddr())
}

// toSink points SINK_ENDPOINT at the test's OTLP sink.
func (c *collector) toSink(s *otlpSink) *collector { return c.set("SINK_ENDPOINT", s.addr) }

// as runs the collector as another user.
func (c *collector) as(user *syscall.Credential) *collector {
	c.user = user
	return c
}

// start runs the collector as run (its log is <dir>/<run>.log) and waits
// until its health check answers; a process of watch exiting meanwhile
// fails the test at once.
func (c *collector) start(run string, watch ...*process) *process {
	c.t.Helper()
	p := c.launch(run)
	poll(c.t, run+" healthy", 60*time.Second, httpOK(c.healthURL()), slices.Concat(watch, []*process{p})...)
	return p
}

// launch runs the collector as run without waiting for it.
func (c *collector) launch(run string) *process {
	c.t.Helper()
	c.checkPlaceholders()
	bin := lookPath(c.t, "OTELCOL_DSH", toolsHint)
	var args []string
	for _, f := range c.configs {
		args = append(args, "--config="+f)
	}
	args = append(args, c.args...)
	var env []string
	for k, v := range c.env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return startAs(c.t, c.dir, run, bin, env, c.user, args...)
}

// placeholders are the ${env:…} names of the configuration files, each
// with whether it has a default.
func (c *collector) placeholders() map[string]bool {
	c.t.Helper()
	out := map[string]bool{}
	for _, f := range c.configs {
		b, err := os.ReadFile(f)
		if err != nil {
			c.t.Fatalf("collector configuration: %v", err)
		}
		for _, m := range collectorEnv.FindAllStringSubmatch(withoutComments(string(b)), -1) {
			out[m[1]] = out[m[1]] || strings.Contains(m[0], ":-")
		}
	}
	return out
}

// yamlComment is a YAML comment: a # at the start of a line or after a
// blank, to the end of the line.
var yamlComment = regexp.MustCompile(`(?m)(^|[ \t])#.*$`)

// withoutComments is a YAML text without its comments (the shipped files
// show optional settings, placeholders included, commented out).
func withoutComments(text string) string { return yamlComment.ReplaceAllString(text, "$1") }

// checkPlaceholders fails the test when a placeholder without a default is
// set neither by the harness nor by the test's environment: the collector
// would quietly take an empty value.
func (c *collector) checkPlaceholders() {
	c.t.Helper()
	for name, hasDefault := range c.placeholders() {
		if _, ok := c.env[name]; !ok && !hasDefault {
			if _, ok := os.LookupEnv(name); !ok {
				c.t.Fatalf("%s uses ${env:%s}, which nothing sets", strings.Join(c.configs, " + "), name)
			}
		}
	}
}

// addr is the value of an address placeholder.
func (c *collector) addr(name string) string {
	c.t.Helper()
	a, ok := c.env[name]
	if !ok {
		c.t.Fatalf("%s: no %s", strings.Join(c.configs, " + "), name)
	}
	return a
}

// ingestURL is the base URL of the session_event receiver's HTTP endpoint.
func (c *collector) ingestURL() string { return "http://" + c.addr("SESSION_EVENT_ENDPOINT") }

// healthURL is the health check's URL.
func (c *collector) healthURL() string { return "http://" + c.addr("HEALTH_ENDPOINT") + "/" }

// selfURL is the collector's own telemetry, Prometheus text.
func (c *collector) selfURL() string {
	return "http://127.0.0.1:" + c.addr("TELEMETRY_PORT") + "/metrics"
}

// metricsURL is the prometheus exporter's endpoint (the turn metrics).
func (c *collector) metricsURL() string {
	return "http://" + c.addr("PROMETHEUS_ENDPOINT") + "/metrics"
}

// sessions is the tailed dsh session root (DSH_SESSIONS).
func (c *collector) sessions() string { return c.addr("DSH_SESSIONS") }

// stateDir is the folder of its file_storage (STATE_DIR).
func (c *collector) stateDir() string { return c.addr("STATE_DIR") }

// self is the sum of one self-metric's series (0 when it is absent).
func (c *collector) self(name string) float64 {
	v, _ := metricSum(context.Background(), c.selfURL(), name)
	return v
}

// accepted is the number of log records its session_event receivers
// accepted, from its self-telemetry.
func (c *collector) accepted(ctx context.Context) (float64, error) {
	return acceptedFrom(ctx, c.selfURL())
}

// freeAddr is a loopback address free at the moment, for a listener of the
// test's (freeAddrs).
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

// Free ports are picked at random below the kernel's ephemeral range
// (Linux's starts at 32768): a port of that range, while its listener is
// down (a backend stopped or restarted, a collector between two runs),
// could be taken by a client connection's source port and not come back.
const freePortMin, freePortMax = 20000, 32767

// freeAddrs is n distinct loopback addresses free at the moment: each is
// tried, and held until all are found, so concurrent scenarios and runs do
// not pick the same.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for tries := 0; len(out) < n; tries++ {
		if tries == 1000 {
			t.Fatalf("no free loopback port in %d–%d after %d tries", freePortMin, freePortMax, tries)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(freePortMin+rand.IntN(freePortMax-freePortMin+1)))
		if err != nil {
			continue // taken
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out
}
