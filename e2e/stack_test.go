//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jaegerPorts are the loopback ports of one Jaeger instance, handed to
// testdata/jaeger.yaml through its variables.
type jaegerPorts struct {
	otlpGRPC, otlpHTTP, queryHTTP, queryGRPC, health int
}

// newJaegerPorts picks free loopback ports for a Jaeger instance (kept
// across its restarts).
func newJaegerPorts(t *testing.T) jaegerPorts {
	t.Helper()
	var n [5]int
	for i, a := range freeAddrs(t, len(n)) {
		n[i], _ = strconv.Atoi(addrPort(a))
	}
	return jaegerPorts{otlpGRPC: n[0], otlpHTTP: n[1], queryHTTP: n[2], queryGRPC: n[3], health: n[4]}
}

// query is the base URL of the instance's query API.
func (p jaegerPorts) query() string { return "http://127.0.0.1:" + strconv.Itoa(p.queryHTTP) }

// healthURL is its health check.
func (p jaegerPorts) healthURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(p.health) + "/status"
}

// otlpGRPCAddr is its OTLP gRPC receiver's address.
func (p jaegerPorts) otlpGRPCAddr() string { return "127.0.0.1:" + strconv.Itoa(p.otlpGRPC) }

// otlpHTTPURL is its OTLP/HTTP receiver's base URL.
func (p jaegerPorts) otlpHTTPURL() string { return "http://127.0.0.1:" + strconv.Itoa(p.otlpHTTP) }

func (p jaegerPorts) env() []string {
	return []string{
		"JAEGER_OTLP_GRPC_PORT=" + strconv.Itoa(p.otlpGRPC), "JAEGER_OTLP_HTTP_PORT=" + strconv.Itoa(p.otlpHTTP),
		"JAEGER_QUERY_HTTP_PORT=" + strconv.Itoa(p.queryHTTP), "JAEGER_QUERY_GRPC_PORT=" + strconv.Itoa(p.queryGRPC),
		"JAEGER_HEALTH_PORT=" + strconv.Itoa(p.health),
	}
}

// startJaeger starts Jaeger v2 (testdata/jaeger.yaml, in-memory storage)
// on ports under name, with extra arguments, and waits until it is
// healthy.
func startJaeger(t *testing.T, dir, name string, ports jaegerPorts, extra ...string) *process {
	t.Helper()
	bin := lookPath(t, "JAEGER", toolsHint)
	p := start(t, dir, name, bin, ports.env(), append([]string{"--config", filepath.Join("testdata", "jaeger.yaml")}, extra...)...)
	poll(t, name+" healthy", 30*time.Second, httpOK(ports.healthURL()), p)
	return p
}

// prometheus is Prometheus 3 scraping a collector (testdata/prometheus.yaml)
// and evaluating the deploy kit's rules, on a free port.
type prometheus struct {
	*process
	url string // its HTTP API's base URL
}

// startPrometheus starts Prometheus on testdata/prometheus.yaml, its
// placeholders filled as the collector's are (Prometheus expands none
// itself), scraping col, and waits until it is ready.
func startPrometheus(t *testing.T, dir string, col *collector) *prometheus {
	t.Helper()
	bin := lookPath(t, "PROMETHEUS", toolsHint)
	rules, err := filepath.Abs(filepath.Join("..", "deploy", "rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"RULES_FILE": rules, "PROMETHEUS_ENDPOINT": col.addr("PROMETHEUS_ENDPOINT"),
		"TELEMETRY_ENDPOINT": "127.0.0.1:" + col.addr("TELEMETRY_PORT")}
	b, err := os.ReadFile(filepath.Join("testdata", "prometheus.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "prometheus.yaml")
	if err := os.WriteFile(cfg, []byte(expandEnv(t, string(b), vars)), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	p := start(t, dir, "prometheus", bin, nil,
		"--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "prometheus"),
		"--web.listen-address="+listen, "--enable-feature=exemplar-storage")
	prom := &prometheus{process: p, url: "http://" + listen}
	poll(t, "prometheus ready", 30*time.Second, httpOK(prom.url+"/-/ready"), p)
	return prom
}

// expandEnv fills the ${env:NAME} and ${env:NAME:-default} placeholders of
// text from vars, as the collector does; a placeholder without a value or
// a default fails the test.
func expandEnv(t *testing.T, text string, vars map[string]string) string {
	t.Helper()
	return collectorEnv.ReplaceAllStringFunc(text, func(m string) string {
		sub := collectorEnv.FindStringSubmatch(m)
		if v, ok := vars[sub[1]]; ok {
			return v
		}
		if !strings.Contains(m, ":-") {
			t.Fatalf("no value for ${env:%s}", sub[1])
		}
		return sub[2]
	})
}
