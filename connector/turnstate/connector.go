package turnstate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
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
// (docs/design.md §9.2). They share one core, keyed by that pointer, so
// each event is counted once (docs/design.md §9.3).
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

	// journal persists the sessions' state through the storage extension
	// (cfg.Storage; nil without one). persistMu orders the journal's writes:
	// held from a batch's ingestion until its writes land, taken before mu.
	journal   *journal
	persistMu sync.Mutex
	self      component.ID
	startErr  error
	running   bool // Start started the loop (set once, under startOnce)

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
			self:   set.ID,
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

// Start restores the journaled sessions, if there is a storage extension,
// and starts the core's sweep and flush loop, once for both instances.
// Starting before the sibling's downstream is safe: receivers start last,
// and turns closed by the restore wait for the first Drain.
func (in *instance) Start(ctx context.Context, host component.Host) error {
	c := in.c
	c.startOnce.Do(func() {
		if id := c.cfg.Storage; id != nil {
			j, err := openJournal(ctx, host, *id, c.self)
			if err != nil {
				c.startErr = err
				return
			}
			c.journal = j
			if err := c.restore(ctx); err != nil {
				c.startErr = fmt.Errorf("turn_state: restore the sessions from %s: %w", id, err)
				return
			}
		}
		c.running = true
		go c.run()
	})
	return c.startErr
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
	ingester := c.ingester
	c.mu.Unlock()
	if ingester != in {
		return nil
	}
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errShutdown
	}
	now := c.clock()
	c.ingested = true
	var keep map[string]*kept
	if c.journal != nil {
		keep = map[string]*kept{}
	}
	for _, input := range c.read(ctx, ld, now, keep, false) {
		c.engine.Ingest(input, now)
	}
	turns := c.engine.Drain()
	ops := c.journalOps(keep, turns)
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
	// The journal is written after the turns went out: a crash in between
	// restores them open, and the re-sent batch closes them again with
	// the same ids, rather than losing them. A failed write fails the
	// batch, so its sender retries it; the engine drops what it has seen.
	if err := c.writeJournal(ctx, ops); err != nil {
		return err
	}
	return nil
}

// read turns a batch into engine inputs: records that are no session event
// or cannot be decoded are counted and skipped, decoding problems are
// counted as violations, and each session's events are sorted by seq — a
// cheap reordering that spares the engine's reorder window.
//
// With keep, the records are also collected by session for the journal.
// restoring: the records come from the journal, and were counted when they
// first arrived.
func (c *core) read(ctx context.Context, ld plog.Logs, now time.Time, keep map[string]*kept, restoring bool) []turnengine.Input {
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
					if !restoring {
						for _, p := range rec.Row.Problems {
							c.engine.RecordViolation(p.Code, now)
						}
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
					if keep != nil {
						keepRecord(keep, rec, rl.Resource(), lr)
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
	if !restoring {
		c.tel.drop(ctx, dropNotSession, notSession)
		c.tel.drop(ctx, dropInvalid, invalid)
	}
	var out []turnengine.Input
	for _, g := range groups {
		bySeq := func(a, b turnengine.Input) int { return cmp.Compare(a.Event.Seq, b.Event.Seq) }
		if !slices.IsSortedFunc(g.inputs, bySeq) { // the common case: a source in order
			slices.SortStableFunc(g.inputs, bySeq)
		}
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
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.engine.Sweep(c.clock())
	turns := c.engine.Drain()
	ops := c.journalOps(nil, turns)
	c.record(ctx)
	next := c.traces
	c.mu.Unlock()
	c.emitTraces(ctx, next, turns)
	if err := c.writeJournal(ctx, ops); err != nil {
		c.logger.Warn("Journal write after a sweep failed; the next batch of those sessions rewrites their state", zap.Error(err))
	}
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
		c.startOnce.Do(func() {}) // never started: also disarms a late Start
		// started: the loop runs (Start succeeded).
		started := c.startErr == nil && c.running
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

		c.persistMu.Lock()
		defer c.persistMu.Unlock()
		c.mu.Lock()
		c.closed = true
		now := c.clock()
		if c.journal == nil {
			c.engine.Flush(turnengine.CauseShutdown, now)
		}
		// With a journal, the open turns stay open: the journal has them,
		// and the next start carries them on.
		turns := c.engine.Drain()
		ops := c.journalOps(nil, turns)
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
		if c.journal != nil {
			if err := c.writeJournal(ctx, ops); err != nil {
				errs = append(errs, err)
			}
			errs = append(errs, c.journal.close(ctx))
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

// keepRecord files a decoded record under its session for the journal.
func keepRecord(keep map[string]*kept, rec logrecord.Record, res pcommon.Resource, lr plog.LogRecord) {
	k := keep[rec.SessionID]
	if k == nil {
		k = &kept{header: plog.NewLogs()}
		keep[rec.SessionID] = k
	}
	if rec.Row.Kind == sessionlog.RowHeader {
		k.header = plog.NewLogs()
		rl := k.header.ResourceLogs().AppendEmpty()
		res.CopyTo(rl.Resource())
		lr.CopyTo(rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		return
	}
	if len(rec.Row.Events) == 0 {
		return
	}
	maxSeq := rec.Row.Events[0].Seq
	for i := range rec.Row.Events {
		maxSeq = max(maxSeq, rec.Row.Events[i].Seq)
	}
	k.recs = append(k.recs, keptRecord{res: res, lr: lr, maxSeq: maxSeq})
}

// journalOps are the journal writes that bring it up to date with the
// engine after a batch (keep) or a sweep, given the turns just drained.
// Callers hold mu.
func (c *core) journalOps(keep map[string]*kept, turns []*turnengine.Turn) []*storage.Operation {
	if c.journal == nil {
		return nil
	}
	ids := make([]string, 0, len(keep)+len(turns))
	for id := range keep {
		ids = append(ids, id)
	}
	for _, t := range turns {
		if keep[t.SessionID] == nil {
			ids = append(ids, t.SessionID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return c.journal.update(c.engine, ids, keep, c.engine.DrainForgotten())
}

// writeJournal writes the journal operations of one batch at once.
func (c *core) writeJournal(ctx context.Context, ops []*storage.Operation) error {
	if len(ops) == 0 {
		return nil
	}
	if err := c.journal.client.Batch(ctx, ops...); err != nil {
		c.tel.journalFailed(ctx)
		return fmt.Errorf("turn_state: write the journal: %w", err)
	}
	return nil
}

// restore resumes every journaled session: its mark first, then its
// records from the mark's Retain on, re-applied without being counted
// again.
func (c *core) restore(ctx context.Context) error {
	rs, err := c.journal.load(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock()
	for _, r := range rs {
		c.engine.Resume(r.id, r.entry.Mark, now)
		for _, in := range c.read(ctx, r.logs, now, nil, true) {
			if in.Event.Seq >= r.entry.Mark.Retain {
				c.engine.Ingest(in, now)
			}
		}
	}
	// More sessions than max_sessions: the oldest were forgotten again.
	if err := c.writeJournal(ctx, c.journal.update(c.engine, nil, nil, c.engine.DrainForgotten())); err != nil {
		return err
	}
	c.record(ctx)
	c.logger.Info("Sessions restored from the journal", zap.Int("sessions", len(rs)), zap.Int("open_turns", c.engine.OpenTurns()))
	return nil
}
