//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fault tests (the restart check, damaged state, a full disk, an outage
// longer than the queue) share loopback ports of their own, Jaeger's
// through jaeger.yaml's variables.
const (
	faultHTTP   = "http://127.0.0.1:15420"
	faultHealth = "http://127.0.0.1:15233/"
	faultSelf   = "http://127.0.0.1:17990/metrics"
)

// Below the ephemeral port range (32768 on), where a client connection could hold one.
var faultJaeger = jaegerPorts{otlpGRPC: 22317, otlpHTTP: 22318, queryHTTP: 22686, queryGRPC: 22685, health: 22133}

// faultAddrs are every address the fault tests listen on.
func faultAddrs() []string {
	return append(faultJaeger.addrs(), "127.0.0.1:15420", "127.0.0.1:15233", "127.0.0.1:17990")
}

// restartOptions vary the restart configuration of docs/operating.md.
type restartOptions struct {
	noJournal    bool   // turn_state without storage
	memoryQueue  bool   // the traces exporter's queue in memory
	batchAfter   bool   // a batch processor in the traces pipeline
	queueSize    int    // the exporters' queue size in requests (default 100000)
	blockOnFull  bool   // the traces queue blocks a full enqueue instead of refusing
	retryTimeout string // the exporters' retry bound, "0s" for none (default 0: retry forever)
}

// restartConfig is docs/operating.md's restart configuration on the fault
// tests' ports: both transports with their state in file_storage
// ($E2E_STATE_DIR), turn_state's journal there, spans to Jaeger and the
// log rows to the test's sink ($E2E_SINK), each exporter behind a queue on
// file_storage that retries forever; the tailed root is $E2E_DSH_ROOT.
func restartConfig(o restartOptions) string {
	journal := "    storage: file_storage\n"
	if o.noJournal {
		journal = ""
	}
	tracesQueueStorage := "      storage: file_storage\n"
	if o.memoryQueue {
		tracesQueueStorage = ""
	}
	tracesProcessors := ""
	if o.batchAfter {
		tracesProcessors = "      processors: [batch]\n"
	}
	queue := o.queueSize
	if queue == 0 {
		queue = 100000
	}
	elapsed := o.retryTimeout
	if elapsed == "" {
		elapsed = "0s"
	}
	return fmt.Sprintf(`
extensions:
  health_check:
    endpoint: 127.0.0.1:15233
  file_storage:
    directory: ${env:E2E_STATE_DIR}
    create_directory: true
receivers:
  session_event:
    http:
      endpoint: 127.0.0.1:15420
      storage: file_storage
    files:
      include: ["${env:E2E_DSH_ROOT}/**/session*.jsonl*"]
      start_at: beginning
      poll_interval: 100ms
      storage: file_storage
processors:
  batch: {}
connectors:
  turn_state:
    gap_timeout: 2s
%s
exporters:
  otlp_grpc/jaeger:
    endpoint: 127.0.0.1:%d
    tls:
      insecure: true
    timeout: 2s
    retry_on_failure:
      enabled: true
      initial_interval: 100ms
      max_interval: 1s
      max_elapsed_time: %s
    sending_queue:
      enabled: true
%s      queue_size: %d
      block_on_overflow: %v
      num_consumers: 2
  otlp_http/sink:
    logs_endpoint: http://${env:E2E_SINK}/v1/logs
    compression: none
    timeout: 2s
    retry_on_failure:
      enabled: true
      initial_interval: 100ms
      max_interval: 1s
      max_elapsed_time: %s
    sending_queue:
      enabled: true
      storage: file_storage
      queue_size: %d
      num_consumers: 1
service:
  extensions: [health_check, file_storage]
  pipelines:
    logs:
      receivers: [session_event]
      exporters: [turn_state, otlp_http/sink]
    traces:
      receivers: [turn_state]
%s      exporters: [otlp_grpc/jaeger]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: 17990
`, journal, faultJaeger.otlpGRPC, elapsed, tracesQueueStorage, queue, o.blockOnFull, elapsed, queue, tracesProcessors)
}

// TestRestartCheckNamesTheLoss: each configuration that cannot keep the
// turns open at a restart is named at start, one line with its fix; the
// restart configuration itself gets none.
func TestRestartCheckNamesTheLoss(t *testing.T) {
	requireFree(t, faultAddrs()...)
	for _, c := range []struct {
		name string
		o    restartOptions
		says string // in the line, or "" for no line
		fix  string
	}{
		{"restart configuration", restartOptions{}, "", ""},
		{"no journal", restartOptions{noJournal: true}, `connector "turn_state" keeps no journal`, "set connectors::turn_state::storage"},
		{"queue in memory", restartOptions{memoryQueue: true}, `exporter "otlp_grpc/jaeger" keeps its sending queue in memory`,
			"set exporters::otlp_grpc/jaeger::sending_queue::storage"},
		{"batch after turn_state", restartOptions{batchAfter: true}, `processor "batch" holds spans in memory`, "sending_queue::batch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sink, sinkAddr := startSink(t)
			_ = sink
			env := []string{"E2E_DSH_ROOT=" + filepath.Join(dir, "sessions"), "E2E_STATE_DIR=" + filepath.Join(dir, "state"), "E2E_SINK=" + sinkAddr}
			p := startCollector(t, dir, "otelcol-dsh", writeConfig(t, dir, "restart.yaml", restartConfig(c.o)), env, faultHealth, 30*time.Second)
			var lines []string
			for _, l := range strings.Split(p.output(), "\n") {
				if strings.Contains(l, "restartcheck") {
					lines = append(lines, l)
				}
			}
			if c.says == "" {
				if len(lines) > 0 {
					errorf(t, "the restart configuration was named:\n%s", strings.Join(lines, "\n"))
				}
				return
			}
			if len(lines) != 1 {
				fatalf(t, "want one restartcheck line, got %d:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			for _, want := range []string{c.says, c.fix, "docs/operating.md"} {
				if !strings.Contains(lines[0], want) {
					errorf(t, "the line does not say %q:\n%s", want, lines[0])
				}
			}
			t.Logf("%s", lines[0])
		})
	}
}

// stateFiles lists the storage files in dir.
func stateFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.Contains(e.Name(), ".damaged-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// selfValue reads one self-metric series of the fault tests' collector (0
// when absent).
func selfValue(name string) float64 {
	v, _ := metricSum(context.Background(), faultSelf, name)
	return v
}
