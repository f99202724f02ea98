//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// jaegerPorts are the loopback ports of one Jaeger instance, handed to
// jaeger.yaml through its variables.
type jaegerPorts struct {
	otlpGRPC, otlpHTTP, queryHTTP, queryGRPC, health int
}

// suiteJaeger is the suite's Jaeger (jaeger.yaml's defaults, the demo's).
var suiteJaeger = jaegerPorts{otlpGRPC: 24317, otlpHTTP: 24318, queryHTTP: 26686, queryGRPC: 26685, health: 23133}

// query is the base URL of the instance's query API.
func (p jaegerPorts) query() string { return "http://127.0.0.1:" + strconv.Itoa(p.queryHTTP) }

// healthURL is its health check.
func (p jaegerPorts) healthURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(p.health) + "/status"
}

// addrs are the addresses the instance listens on, for requireFree.
func (p jaegerPorts) addrs() []string {
	var out []string
	for _, n := range []int{p.otlpGRPC, p.otlpHTTP, p.queryHTTP, p.queryGRPC, p.health} {
		out = append(out, "127.0.0.1:"+strconv.Itoa(n))
	}
	return out
}

func (p jaegerPorts) env() []string {
	return []string{
		"JAEGER_OTLP_GRPC_PORT=" + strconv.Itoa(p.otlpGRPC), "JAEGER_OTLP_HTTP_PORT=" + strconv.Itoa(p.otlpHTTP),
		"JAEGER_QUERY_HTTP_PORT=" + strconv.Itoa(p.queryHTTP), "JAEGER_QUERY_GRPC_PORT=" + strconv.Itoa(p.queryGRPC),
		"JAEGER_HEALTH_PORT=" + strconv.Itoa(p.health),
	}
}

// startJaeger starts Jaeger v2 (jaeger.yaml, in-memory storage) on ports
// under name, with extra arguments, and waits until it is healthy.
func startJaeger(t *testing.T, dir, name string, ports jaegerPorts, extra ...string) *process {
	t.Helper()
	bin := lookPath(t, "JAEGER", toolsHint)
	p := start(t, dir, name, bin, ports.env(), append([]string{"--config", "jaeger.yaml"}, extra...)...)
	poll(t, name+" healthy", 30*time.Second, httpOK(ports.healthURL()), p)
	return p
}

// writeConfig writes a collector configuration into dir and returns its
// path.
func writeConfig(t *testing.T, dir, name, yaml string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startCollector starts otelcol-dsh on cfg under name and waits until its
// health check (health, a URL) answers; timeout bounds the wait.
func startCollector(t *testing.T, dir, name, cfg string, env []string, health string, timeout time.Duration) *process {
	t.Helper()
	bin := lookPath(t, "OTELCOL_DSH", toolsHint)
	p := start(t, dir, name, bin, env, "--config="+cfg)
	poll(t, fmt.Sprintf("%s healthy", name), timeout, httpOK(health), p)
	return p
}
