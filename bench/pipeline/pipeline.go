// Package pipeline runs otelcol-dsh-bench's file path in one process — the
// session_event receiver tailing a bench/gen corpus, both turn_state
// instances (logs→traces, logs→metrics, one core) and the log records,
// spans and data points counted — built from the real factories, so that
// `go test -cpuprofile` sees the hot path of the distribution
// (BenchmarkFilePipeline) and other benchmarks can run the same path or
// keep what it emits (bench/codec's contract floor).
package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
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

// Manifest is what the pipeline reads of bench/gen's manifest.json.
type Manifest struct {
	Rows   int64 `json:"rows"`
	Events int64 `json:"events"`
	Bytes  int64 `json:"bytes"`
	Spans  int64 `json:"spans"`
}

// ReadManifest reads dir/manifest.json, as bench/gen wrote it.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	return m, nil
}

// Sink sees, read-only, what reaches the end of the pipeline; any of its
// functions may be nil. They are called from the pipeline's goroutines,
// possibly at once.
type Sink struct {
	Logs    func(plog.Logs)
	Traces  func(ptrace.Traces)
	Metrics func(pmetric.Metrics)
}

// counter counts what reaches the end of the pipeline and hands it to the
// sink.
type counter struct {
	logs, spans, points atomic.Int64
	sink                Sink
}

func (c *counter) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *counter) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	c.logs.Add(int64(ld.LogRecordCount()))
	if c.sink.Logs != nil {
		c.sink.Logs(ld)
	}
	return nil
}

func (c *counter) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	c.spans.Add(int64(td.SpanCount()))
	if c.sink.Traces != nil {
		c.sink.Traces(td)
	}
	return nil
}

func (c *counter) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	c.points.Add(int64(md.DataPointCount()))
	if c.sink.Metrics != nil {
		c.sink.Metrics(md)
	}
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

// Run runs the pipeline once over the corpus in dir, from fresh
// components, until every row's log record and every span of m reached
// the end (at most five minutes), then shuts it down.
func Run(ctx context.Context, dir string, m Manifest, sink Sink) error {
	host := componenttest.NewNopHost()
	count := &counter{sink: sink}
	cf := turnstate.NewFactory()
	ccfg := cf.CreateDefaultConfig()
	cset := connectortest.NewNopSettings(cf.Type())
	cset.ID = component.NewID(cf.Type())
	toTr, err := cf.CreateLogsToTraces(ctx, cset, ccfg,
		connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): count}))
	if err != nil {
		return err
	}
	toMt, err := cf.CreateLogsToMetrics(ctx, cset, ccfg,
		connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): count}))
	if err != nil {
		return err
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
		return err
	}

	for _, c := range []component.Component{toMt, toTr, rcv} {
		if err := c.Start(ctx, host); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	var waitErr error
	for count.logs.Load() < m.Rows || count.spans.Load() < m.Spans {
		if time.Now().After(deadline) {
			waitErr = fmt.Errorf("timeout: %d of %d log records, %d of %d spans", count.logs.Load(), m.Rows, count.spans.Load(), m.Spans)
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	for _, c := range []component.Component{rcv, toTr, toMt} {
		if err := c.Shutdown(ctx); err != nil {
			return err
		}
	}
	if waitErr != nil {
		return waitErr
	}
	if count.logs.Load() != m.Rows || count.spans.Load() != m.Spans {
		return fmt.Errorf("counted %d log records, %d spans; want %d, %d", count.logs.Load(), count.spans.Load(), m.Rows, m.Spans)
	}
	return nil
}
