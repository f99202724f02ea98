package countexporter

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// Status is what the exporter writes to its status file. Times are Unix
// nanoseconds of the wall clock when a batch was counted (0: none yet).
type Status struct {
	PID int `json:"pid"`

	LogRecords    int64 `json:"log_records"`
	LogBatches    int64 `json:"log_batches"`
	Spans         int64 `json:"spans"`
	SpanBatches   int64 `json:"span_batches"`
	DataPoints    int64 `json:"data_points"`
	MetricBatches int64 `json:"metric_batches"`

	// FirstUnixNano and LastUnixNano bound every item of every signal.
	FirstUnixNano int64 `json:"first_unix_nano"`
	LastUnixNano  int64 `json:"last_unix_nano"`
	// The last item of each signal.
	LogsLastUnixNano    int64 `json:"logs_last_unix_nano"`
	SpansLastUnixNano   int64 `json:"spans_last_unix_nano"`
	MetricsLastUnixNano int64 `json:"metrics_last_unix_nano"`

	// WrittenUnixNano is when this status was written; Final is true for
	// the write at shutdown.
	WrittenUnixNano int64 `json:"written_unix_nano"`
	Final           bool  `json:"final"`
}

// counters are the shared state of one component ID: the collector
// creates one exporter per signal, and all of them count here.
type counters struct {
	logRecords, logBatches       atomic.Int64
	spans, spanBatches           atomic.Int64
	dataPoints, metricBatches    atomic.Int64
	first, last                  atomic.Int64
	logsLast, spansLast, metLast atomic.Int64
	changed                      atomic.Bool
}

// mark records the arrival time of a batch of n items (none: no time).
func (c *counters) mark(n int, signalLast *atomic.Int64) {
	if n == 0 {
		return
	}
	now := time.Now().UnixNano()
	c.first.CompareAndSwap(0, now)
	c.last.Store(now)
	signalLast.Store(now)
	c.changed.Store(true)
}

func (c *counters) status() Status {
	return Status{
		PID:        os.Getpid(),
		LogRecords: c.logRecords.Load(), LogBatches: c.logBatches.Load(),
		Spans: c.spans.Load(), SpanBatches: c.spanBatches.Load(),
		DataPoints: c.dataPoints.Load(), MetricBatches: c.metricBatches.Load(),
		FirstUnixNano: c.first.Load(), LastUnixNano: c.last.Load(),
		LogsLastUnixNano: c.logsLast.Load(), SpansLastUnixNano: c.spansLast.Load(),
		MetricsLastUnixNano: c.metLast.Load(),
	}
}

// core is one component ID's counters and status writer, shared by its
// exporters (one per signal) and reference counted.
type core struct {
	id     component.ID
	cfg    *Config
	logger *zap.Logger
	counters

	// guarded by registry.mu
	refs    int
	running int
	stop    chan struct{}
	done    chan struct{}
}

var registry = struct {
	mu    sync.Mutex
	cores map[component.ID]*core
}{cores: map[component.ID]*core{}}

func acquire(set exporter.Settings, cfg *Config) *core {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	c := registry.cores[set.ID]
	if c == nil {
		c = &core{id: set.ID, cfg: cfg, logger: set.Logger}
		registry.cores[set.ID] = c
	}
	c.refs++
	return c
}

func (c *core) start() {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	c.running++
	if c.running == 1 && c.cfg.StatusFile != "" {
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		go c.writeLoop(c.stop, c.done)
	}
}

// release drops one exporter's reference; the last running one stops the
// writer and writes the final status.
func (c *core) release(started bool) error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	var err error
	if started {
		c.running--
		if c.running == 0 && c.stop != nil {
			close(c.stop)
			<-c.done
			c.stop, c.done = nil, nil
			err = c.write(true)
		}
	}
	c.refs--
	if c.refs == 0 {
		delete(registry.cores, c.id)
	}
	return err
}

func (c *core) writeLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	if err := c.write(false); err != nil { // an empty status: the collector is up
		c.logger.Warn("count exporter: status file not written", zap.Error(err))
	}
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if !c.changed.Swap(false) {
				continue
			}
			if err := c.write(false); err != nil {
				c.logger.Warn("count exporter: status file not written", zap.Error(err))
			}
		}
	}
}

// write replaces the status file through a rename, so a reader never sees
// a partial object.
func (c *core) write(final bool) error {
	s := c.status()
	s.Final = final
	s.WrittenUnixNano = time.Now().UnixNano()
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	path := c.cfg.StatusFile
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if _, err = tmp.Write(append(b, '\n')); err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// countExporter is the exporter of one signal; it implements
// exporter.Logs, exporter.Traces and exporter.Metrics.
type countExporter struct {
	core    *core
	started atomic.Bool
}

func newExporter(set exporter.Settings, cfg *Config) *countExporter {
	return &countExporter{core: acquire(set, cfg)}
}

// Start starts the status writer (once per component ID).
func (e *countExporter) Start(context.Context, component.Host) error {
	if !e.started.Swap(true) {
		e.core.start()
	}
	return nil
}

// Shutdown writes the final status when it is the last of its ID.
func (e *countExporter) Shutdown(context.Context) error {
	return e.core.release(e.started.Swap(false))
}

// Capabilities: the exporter only reads.
func (e *countExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// ConsumeLogs counts the log records.
func (e *countExporter) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	c := &e.core.counters
	n := ld.LogRecordCount()
	c.logRecords.Add(int64(n))
	c.logBatches.Add(1)
	c.mark(n, &c.logsLast)
	return nil
}

// ConsumeTraces counts the spans.
func (e *countExporter) ConsumeTraces(_ context.Context, td ptrace.Traces) error {
	c := &e.core.counters
	n := td.SpanCount()
	c.spans.Add(int64(n))
	c.spanBatches.Add(1)
	c.mark(n, &c.spansLast)
	return nil
}

// ConsumeMetrics counts the data points.
func (e *countExporter) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	c := &e.core.counters
	n := md.DataPointCount()
	c.dataPoints.Add(int64(n))
	c.metricBatches.Add(1)
	c.mark(n, &c.metLast)
	return nil
}
