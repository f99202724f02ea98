package turnstate

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// The service creates two instances of turn_state — logs→traces and
// logs→metrics — with the same *Config, and hands every logs batch to both
// (collector-notes §6.2). They share one core, keyed by that pointer, so
// each event is counted once (§6.3).
var (
	registryMu sync.Mutex
	registry   = map[*Config]*core{}
)

var errShutdown = errors.New("turn_state connector is shut down")

// core is the state shared by the instances of one config: the turn
// engine, the record reader and the wiring to the next consumers.
type core struct {
	cfg    *Config
	logger *zap.Logger
	tel    *telemetry

	mu       sync.Mutex // guards everything below; never held while calling next
	clock    func() time.Time
	engine   *turnengine.Engine
	reader   *logrecord.Reader
	stats    turnengine.Stats // the snapshot last recorded in self-telemetry
	traces   consumer.Traces
	metrics  consumer.Metrics
	ingester *instance
	ingested bool // some batch was consumed
	closed   bool

	startOnce, stopOnce sync.Once
	stop, done          chan struct{}
}

// instance is one of the connector instances the service creates; both
// delegate to the shared core.
type instance struct{ c *core }

var _ connector.Logs = (*instance)(nil)

// attach returns a new instance on the core of cfg, creating the core if
// needed, and wires the instance's next consumer into it. The first
// instance created is the core's single ingester.
func attach(cfg *Config, set connector.Settings, traces consumer.Traces, metrics consumer.Metrics, clock func() time.Time) (*instance, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	c := registry[cfg]
	if c == nil {
		tel, err := newTelemetry(set.TelemetrySettings)
		if err != nil {
			return nil, err
		}
		e := turnengine.New(cfg.engineConfig())
		c = &core{
			cfg:    cfg,
			logger: set.Logger,
			tel:    tel,
			clock:  clock,
			engine: e,
			reader: logrecord.NewReader(cfg.MaxSessions),
			stats:  e.Stats(),
			stop:   make(chan struct{}),
			done:   make(chan struct{}),
		}
		registry[cfg] = c
	}
	in := &instance{c: c}
	c.mu.Lock()
	defer c.mu.Unlock()
	if traces != nil {
		c.traces = traces
	}
	if metrics != nil {
		c.metrics = metrics
	}
	if c.ingester == nil {
		c.ingester = in
	}
	return in, nil
}

// Capabilities: the input is only read.
func (in *instance) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start starts the core's sweep and flush loop, once for both instances.
// Starting before the sibling's downstream is safe: receivers start last,
// so the core holds nothing to emit yet.
func (in *instance) Start(context.Context, component.Host) error {
	c := in.c
	c.startOnce.Do(func() { go c.run() })
	return nil
}

// Shutdown does all the work on the first call, whichever instance it
// comes to. By then every upstream component has stopped and the
// downstream of both instances still runs (shutdown is in topological
// order), so this is the one moment to flush open turns; on the last call
// the sibling's pipeline may be stopped already. The core leaves the
// registry even if it never started, so instances created later with the
// same config get a fresh core instead of a dead one.
func (in *instance) Shutdown(ctx context.Context) error {
	return in.c.shutdown(ctx)
}

// ConsumeLogs maps one batch of records. Only the ingester instance does;
// the other gets the same batch and ignores it.
func (in *instance) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	c := in.c
	c.mu.Lock()
	if c.ingester != in {
		c.mu.Unlock()
		return nil
	}
	if c.closed {
		c.mu.Unlock()
		return errShutdown
	}
	now := c.clock()
	c.ingested = true
	for _, input := range c.read(ctx, ld, now) {
		c.engine.Ingest(input, now)
	}
	turns := c.engine.Drain()
	c.record(ctx)
	next := c.traces
	c.mu.Unlock()

	// An error from next is counted and logged, and nil is returned: the
	// batch has been applied to the turn state already, so an error would
	// make the receiver retry it (HTTP 503, Kafka redelivery, file retry)
	// and every event in it would be seen twice — counted as duplicates at
	// best, and the turns closed by it would never be emitted again anyway
	// (each span is emitted exactly once). Retrying is the exporter's job
	// (its sending queue), behind us.
	c.emitTraces(ctx, next, turns)
	return nil
}

// read turns a batch into engine inputs: records that are no session event
// or cannot be decoded are counted and skipped, decoding problems are
// counted as violations, and each session's events are sorted by seq — a
// cheap reordering that spares the engine's reorder window.
func (c *core) read(ctx context.Context, ld plog.Logs, now time.Time) []turnengine.Input {
	type group struct {
		id     string
		inputs []turnengine.Input
	}
	var groups []*group
	bySession := map[string]*group{}
	var notSession, invalid int64
	rls := ld.ResourceLogs()
	// Headers first: a header fixes the format its session's rows decode in,
	// and may come after them in a batch.
	for _, headers := range []bool{true, false} {
		for i := 0; i < rls.Len(); i++ {
			rl := rls.At(i)
			sls := rl.ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					lr := lrs.At(k)
					if (lr.EventName() == logrecord.EventNameHeader) != headers {
						continue
					}
					rec, err := c.reader.Read(rl.Resource(), lr)
					if errors.Is(err, logrecord.ErrNotSession) {
						notSession++
						continue
					}
					if err != nil {
						invalid++
						c.logger.Debug("Undecodable session record", zap.Error(err))
						continue
					}
					for _, p := range rec.Row.Problems {
						c.engine.RecordViolation(p.Code, now)
					}
					switch rec.Row.Kind {
					case sessionlog.RowInvalid:
						invalid++
						continue
					case sessionlog.RowOther:
						notSession++
						continue
					}
					g := bySession[rec.SessionID]
					if g == nil {
						g = &group{id: rec.SessionID}
						bySession[rec.SessionID] = g
						groups = append(groups, g)
					}
					for e := range rec.Row.Events {
						g.inputs = append(g.inputs, turnengine.Input{
							SessionID: rec.SessionID,
							Event:     &rec.Row.Events[e],
							Format:    rec.Format,
							Header:    rec.Header,
							Gappy:     rec.Origin == logrecord.OriginDshV0,
						})
					}
				}
			}
		}
	}
	c.tel.drop(ctx, dropNotSession, notSession)
	c.tel.drop(ctx, dropInvalid, invalid)
	var out []turnengine.Input
	for _, g := range groups {
		slices.SortStableFunc(g.inputs, func(a, b turnengine.Input) int { return cmp.Compare(a.Event.Seq, b.Event.Seq) })
		out = append(out, g.inputs...)
	}
	return out
}

// record brings self-telemetry up to date with the engine. Callers hold mu.
func (c *core) record(ctx context.Context) {
	cur := c.engine.Stats()
	c.tel.update(ctx, c.stats, cur, c.engine.OpenTurns(), c.engine.Sessions())
	c.stats = cur
}

// emitTraces hands closed turns to the traces consumer, if there is one.
// Called without mu.
func (c *core) emitTraces(ctx context.Context, next consumer.Traces, turns []*turnengine.Turn) {
	if next == nil || len(turns) == 0 {
		return
	}
	if err := next.ConsumeTraces(ctx, turnengine.Traces(turns)); err != nil {
		c.tel.emitFailed(ctx, "traces")
		c.logger.Warn("Next consumer refused turn traces; they are not retried", zap.Int("turns", len(turns)), zap.Error(err))
	}
}

// metricsLocked renders the cumulative metrics at now. Callers hold mu.
func (c *core) metricsLocked(now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	c.engine.Metrics().AppendTo(sm, now, c.engine.OpenTurns())
	return md
}

// emitMetrics hands a metrics snapshot to the metrics consumer. Called
// without mu.
func (c *core) emitMetrics(ctx context.Context, next consumer.Metrics, md pmetric.Metrics) {
	if err := next.ConsumeMetrics(ctx, md); err != nil {
		c.tel.emitFailed(ctx, "metrics")
		c.logger.Warn("Next consumer refused turn metrics; the next flush carries the cumulative values", zap.Error(err))
	}
}

// sweep closes what has waited long enough: skipped gaps and turns silent
// for dangling_timeout.
func (c *core) sweep(ctx context.Context) {
	c.mu.Lock()
	c.engine.Sweep(c.clock())
	turns := c.engine.Drain()
	c.record(ctx)
	next := c.traces
	c.mu.Unlock()
	c.emitTraces(ctx, next, turns)
}

// flushMetrics emits the cumulative metrics.
func (c *core) flushMetrics(ctx context.Context) {
	c.mu.Lock()
	next := c.metrics
	if next == nil {
		c.mu.Unlock()
		return
	}
	md := c.metricsLocked(c.clock())
	c.mu.Unlock()
	c.emitMetrics(ctx, next, md)
}

// sweepInterval is a fraction of the shortest wait the engine enforces, at
// most a second: expiry lags its deadline by at most one tick.
func (c *core) sweepInterval() time.Duration {
	d := min(c.cfg.DanglingTimeout/4, c.cfg.GapTimeout, time.Second)
	return max(d, time.Millisecond)
}

// run is the core's loop: sweep on a short ticker, flush metrics on
// metrics_flush_interval, until stop.
func (c *core) run() {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sweep := time.NewTicker(c.sweepInterval())
	defer sweep.Stop()
	flush := time.NewTicker(c.cfg.MetricsFlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-sweep.C:
			c.sweep(ctx)
		case <-flush.C:
			c.flushMetrics(ctx)
		}
	}
}

func (c *core) shutdown(ctx context.Context) error {
	var errs []error
	c.stopOnce.Do(func() {
		started := true
		c.startOnce.Do(func() { started = false }) // never started: also disarms a late Start
		if started {
			close(c.stop)
			select {
			case <-c.done:
			case <-ctx.Done():
				// The loop is stuck in a slow consumer; flush anyway (the
				// engine is behind mu) and report the deadline.
				errs = append(errs, ctx.Err())
			}
		}

		c.mu.Lock()
		c.closed = true
		now := c.clock()
		c.engine.Flush(turnengine.CauseShutdown, now)
		turns := c.engine.Drain()
		c.record(ctx)
		// A core that never started has seen no data in a running collector
		// (receivers start last), and its downstream may never have started:
		// emit only what there is.
		emit := started || c.ingested
		traces, metrics := c.traces, c.metrics
		var md pmetric.Metrics
		if emit && metrics != nil {
			md = c.metricsLocked(now)
		}
		c.mu.Unlock()

		if emit {
			c.emitTraces(ctx, traces, turns)
			if metrics != nil {
				c.emitMetrics(ctx, metrics, md)
			}
		}
		errs = append(errs, c.tel.shutdown())

		registryMu.Lock()
		if registry[c.cfg] == c {
			delete(registry, c.cfg)
		}
		registryMu.Unlock()
	})
	return errors.Join(errs...)
}
