// Package pipeline holds BenchmarkFilePipeline: otelcol-dsh-bench's file
// path in one process — the session_event receiver tailing a bench/gen
// corpus, both turn_state instances (logs→traces, logs→metrics, one core)
// and the log records, spans and data points counted — built from the real
// factories, so that `go test -cpuprofile` sees the hot path of the
// distribution (bench/profile.sh).
package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/connector/turnstate"
	"github.com/dshtrace/dshtrace/receiver/sessionevent"
)

// manifest is what the benchmark reads of bench/gen's manifest.json.
type manifest struct {
	Rows   int64 `json:"rows"`
	Events int64 `json:"events"`
	Bytes  int64 `json:"bytes"`
	Spans  int64 `json:"spans"`
}

// corpus is BENCH_CORPUS (a bench/gen output directory), or a small mixed
// corpus written with bench/gen into a temp dir.
func corpus(b *testing.B) (string, manifest) {
	dir := os.Getenv("BENCH_CORPUS")
	if dir == "" {
		dir = b.TempDir()
		cmd := exec.Command("go", "run", "github.com/dshtrace/dshtrace/bench/gen", "-out", dir, "-force",
			"-sessions", "24", "-turns", "20", "-format", "mix")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("bench/gen: %v\n%s", err, out)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		b.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		b.Fatal(err)
	}
	return dir, m
}

// counter counts what reaches the end of the pipeline and drops it.
type counter struct{ logs, spans, points atomic.Int64 }

func (c *counter) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *counter) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	c.logs.Add(int64(ld.LogRecordCount()))
	return nil
}

func (c *counter) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	c.spans.Add(int64(td.SpanCount()))
	return nil
}

func (c *counter) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	c.points.Add(int64(md.DataPointCount()))
	return nil
}

// fanout hands each batch, read-only, to every consumer in turn, as the
// service's fan-out does for a logs pipeline with several exporters.
type fanout []consumer.Logs

func (f fanout) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (f fanout) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	ld.MarkReadOnly()
	for _, c := range f {
		if err := c.ConsumeLogs(ctx, ld); err != nil {
			return err
		}
	}
	return nil
}

func BenchmarkFilePipeline(b *testing.B) {
	dir, m := corpus(b)
	ctx := context.Background()
	host := componenttest.NewNopHost()
	b.SetBytes(m.Bytes)
	b.ReportAllocs()
	start, cpu0 := time.Now(), cpuTime(b)
	for range b.N {
		count := new(counter)
		cf := turnstate.NewFactory()
		ccfg := cf.CreateDefaultConfig()
		cset := connectortest.NewNopSettings(cf.Type())
		cset.ID = component.NewID(cf.Type())
		toTr, err := cf.CreateLogsToTraces(ctx, cset, ccfg,
			connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): count}))
		if err != nil {
			b.Fatal(err)
		}
		toMt, err := cf.CreateLogsToMetrics(ctx, cset, ccfg,
			connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): count}))
		if err != nil {
			b.Fatal(err)
		}

		rf := sessionevent.NewFactory()
		rcfg := rf.CreateDefaultConfig().(*sessionevent.Config)
		rcfg.HTTP = configoptional.None[sessionevent.HTTPConfig]()
		files := rcfg.Files.GetOrInsertDefault()
		files.Include = []string{filepath.Join(dir, "**", "session*.jsonl")}
		files.PollInterval = 200 * time.Millisecond
		rset := receivertest.NewNopSettings(rf.Type())
		rset.ID = component.NewID(rf.Type())
		rcv, err := rf.CreateLogs(ctx, rset, rcfg, fanout{toTr, toMt, count})
		if err != nil {
			b.Fatal(err)
		}

		for _, c := range []component.Component{toMt, toTr, rcv} {
			if err := c.Start(ctx, host); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Now().Add(5 * time.Minute)
		for count.logs.Load() < m.Rows || count.spans.Load() < m.Spans {
			if time.Now().After(deadline) {
				b.Fatalf("timeout: %d of %d log records, %d of %d spans", count.logs.Load(), m.Rows, count.spans.Load(), m.Spans)
			}
			time.Sleep(2 * time.Millisecond)
		}
		for _, c := range []component.Component{rcv, toTr, toMt} {
			if err := c.Shutdown(ctx); err != nil {
				b.Fatal(err)
			}
		}
		if count.logs.Load() != m.Rows || count.spans.Load() != m.Spans {
			b.Fatalf("counted %d log records, %d spans; want %d, %d", count.logs.Load(), count.spans.Load(), m.Rows, m.Spans)
		}
	}
	b.ReportMetric(float64(m.Events)*float64(b.N)/time.Since(start).Seconds(), "events/s")
	// The process's CPU time per event, as bench/harness reports it for a
	// collector: steadier than wall time on a shared machine.
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/(float64(m.Events)*float64(b.N)), "cpu-µs/event")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
