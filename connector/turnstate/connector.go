package turnstate

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/xpdata/pref"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/journal"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

var errShutdown = errors.New("turn_state connector is shut down")

// errProtoPooling refuses the start under the collector's pdata.useProtoPooling
// feature gate: with it, the pipelines the connector takes part in lose data
// past their first consumer (README, "Leave the pdata.useProtoPooling feature
// gate off").
var errProtoPooling = errors.New("turn_state: the feature gate pdata.useProtoPooling is on; " +
	"with it the pipelines turn_state takes part in lose data past their first consumer: turn it off")

// core is the state shared by the instances of one config (share.go): the
// turn engine, emission, the sweep, and the journal and record decoder it
// drives.
//
// Lock order — two locks, the second only ever taken while holding the
// first or alone:
//
//  1. passMu: held for one whole pass of settle, from the change to the
//     engine to the start of its journal write, including the calls to the
//     traces consumer and the journal's Before steps (which may wait for
//     the network). It makes the passes strictly one after another.
//  2. mu: the engine and the fields marked below; held for in-memory work
//     only, never while calling a next consumer or the journal's store.
//
// Every other lock is a leaf, owned by one type and held only inside its
// methods, which take no other lock: registryMu (share.go), the outputs'
// (held.go), the decoder's (batch.go) and the journal's own
// (internal/journal). The metrics flush takes mu alone, so it never waits
// for a slow traces consumer or journal; ConsumeLogs's check of which
// instance ingests takes no lock. The self-telemetry gauges take none.
type core struct {
	cfg    *Config
	logger *zap.Logger
	tel    *metadata.Telemetry
	self   component.ID
	clock  func() time.Time

	passMu sync.Mutex // lock 1 (see above)
	mu     sync.Mutex // lock 2: guards engine, series, stats and phase
	engine *turnengine.Engine
	series *turnrender.Metrics // the engine's observer: the cumulative metrics
	stats  turnengine.Stats    // the snapshot last recorded in self-telemetry
	phase  phase

	// journal keeps the sessions' state through a restart (nil without
	// storage or changelog); set by the restore pass at start.
	journal journal.Journal
	out     *outputs  // the next consumers, and the turns they refused
	sampler *sampler  // which closed turns go out (guarded by mu)
	in      *decoder  // the record reader and the order of decoded batches
	gauges  gauges    // the self-telemetry gauges' values
	life    lifecycle // start and stop
}

// phase is where the core is in its life, guarded by mu.
type phase struct {
	ingested bool // some batch was consumed
	running  bool // start started the loop
	closed   bool // the final pass ran: no pass after it
}

// gauges are the gauges' values, kept current by the passes so that the
// telemetry callback never takes a lock.
type gauges struct {
	open, sessions, lag, heldTurns, heldSpans atomic.Int64
	// view is the changelog journal, once open, for the view gauges.
	view atomic.Pointer[journal.Changelog]
}

// lifecycle starts the core once and stops it once.
type lifecycle struct {
	startOnce, stopOnce sync.Once
	startErr            error // start's result (written once, in startOnce)
	stop, done          chan struct{}
}

func newCore(cfg *Config, set connector.Settings, clock func() time.Time) (*core, error) {
	ec := cfg.engineConfig()
	if prices, err := cfg.priceTable(); err == nil { // validated already
		ec.Prices = prices
	}
	series := turnrender.NewMetrics(cfg.MaxAttributeValues)
	series.SetByClient(cfg.TurnsByClient)
	c := &core{
		cfg:    cfg,
		logger: set.Logger,
		self:   set.ID,
		clock:  clock,
		series: series,
		life:   lifecycle{stop: make(chan struct{}), done: make(chan struct{})},
	}
	c.sampler = newSampler(cfg.Sampling, &c.gauges.heldSpans)
	ec.Observer = observers{series, c.sampler}
	c.engine = turnengine.New(ec)
	c.stats = c.engine.Stats()
	tel, err := metadata.NewTelemetry(set.TelemetrySettings, metadata.Gauges{
		TurnsOpen:    c.gauges.open.Load,
		SessionsOpen: c.gauges.sessions.Load,
		JournalLag:   c.gauges.lag.Load,
		TurnsHeld:    c.gauges.heldTurns.Load,
		HeldSpans:    c.gauges.heldSpans.Load,
		View: func() (int64, int64, int64, bool) {
			j := c.gauges.view.Load()
			if j == nil {
				return 0, 0, 0, false
			}
			s, b, p := j.View()
			return s, b, p, true
		},
	})
	if err != nil {
		return nil, err
	}
	c.tel = tel
	c.sampler.tel = tel
	c.in = newDecoder(cfg.MaxSessions, set.Logger, tel)
	c.out = &outputs{logger: set.Logger, tel: tel, gauge: &c.gauges.heldTurns}
	// The counters of what must stay zero exist from the start, so that an
	// alert on them has a series to watch.
	tel.TurnsLost.Add(context.Background(), 0)
	tel.JournalDamaged.Add(context.Background(), 0)
	tel.ChangelogLost.Add(context.Background(), 0)
	if cfg.Sampling.On() {
		tel.ZeroSampled(context.Background(), sampling.Reasons, sampling.Ratio)
	}
	return c, nil
}

// A pass is one trip along the drain → emit → journal path (settle).
type pass struct {
	// prepare runs first, under passMu alone: it may wait for the network
	// (the changelog view's sync); an error ends the pass unapplied.
	prepare func(ctx context.Context) error
	// change applies what the pass is for to the engine. It runs under mu
	// and returns the records to journal, by session (nil for none).
	change func(now time.Time) map[string]*journal.Kept
	// hold leaves the turns the change closed in the engine for the next
	// pass to emit: at start the next consumers may not run yet.
	hold bool
	// final is the shutdown pass: the core is closed for good, and the
	// cumulative metrics go out after the turns.
	final bool
	// exclusive waits for the journal writes in flight before it applies
	// anything: a pass that may touch any session (the sweep) never works
	// on one whose last write has not landed.
	exclusive bool
}

// settle is the one path by which the turn state changes and closed turns
// leave the connector, taken by ConsumeLogs, the sweep, shutdown and the
// restore at start:
//
//  1. under passMu and mu: refuse if the core is closed (errShutdown),
//     apply the change, drain the turns it closed, work out the journal
//     writes that bring the journal up to date with the engine, and bring
//     self-telemetry up to date;
//  2. under passMu: hand the drained turns to the traces consumer (and
//     for the final pass the metrics to the metrics consumer);
//  3. under passMu: start the journal write, in one storage batch;
//  4. under no lock: wait for it. With the changelog the writes of passes
//     that follow one another closely share a round trip to the brokers;
//     they are started in pass order, and land in it.
//
// It guarantees:
//   - the journal lets go of a turn (its records deleted, its session's
//     mark moved past it) only after the turn was handed to the traces
//     consumer. A crash in between restores the turn open, and the batch
//     the receiver delivers again (it was never acknowledged) or the next
//     sweep closes it again, with the same ids: a turn may be emitted
//     twice across a crash, never lost;
//   - settle returns only after the journal write landed, so a batch is
//     acknowledged only once the journal holds its records; a failed
//     write is counted and returned;
//   - passes never interleave, so journal writes land in the order of the
//     engine states they record, and each closed turn is drained, and
//     emitted, by exactly one pass.
//
// A traces consumer that refuses the turns (its queue full or failing to
// persist, an exporter without a queue whose backend is away) does not
// lose them: the pass holds them, keeps its journal writes back (the
// sessions are then behind, as after a failed write) and fails; every
// later pass first offers the held turns again and fails, applying
// nothing, until they are accepted. Senders retry what a failed pass
// refused (HTTP 503, the tailer waits, Kafka redelivers), and the events
// applied already are dropped as duplicates. An error from the metrics
// consumer is counted and logged: the next flush carries the cumulative
// values.
func (c *core) settle(ctx context.Context, p pass) error {
	w, err := c.settleOrdered(ctx, p)
	if err != nil {
		return err
	}
	return c.finishJournal(ctx, w)
}

// settleOrdered is settle's steps 1 to 3, under passMu.
func (c *core) settleOrdered(ctx context.Context, p pass) (journal.Write, error) {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	if (p.exclusive || p.final) && c.journal != nil {
		c.journal.Wait()
	}
	if err := c.out.offerHeld(ctx); err != nil {
		if p.final {
			c.mu.Lock()
			c.phase.closed = true
			c.mu.Unlock()
			c.out.shutdownHeld(ctx, c.journal != nil)
		}
		return journal.Write{}, err
	}
	if p.prepare != nil {
		if err := p.prepare(ctx); err != nil {
			return journal.Write{}, err
		}
	}
	c.mu.Lock()
	if c.phase.closed {
		c.mu.Unlock()
		return journal.Write{}, errShutdown
	}
	if p.final {
		c.phase.closed = true
	}
	now := c.clock()
	keep := p.change(now)
	var turns []*turnengine.Turn
	if !p.hold {
		turns = c.engine.Drain()
	}
	ops := c.journalOps(keep, turns)
	out := c.sampler.filter(ctx, turns)
	c.record(ctx)
	// A core that never started has seen no data in a running collector
	// (receivers start last), and its downstream may never have started:
	// then there is nothing to emit to.
	emit := c.phase.running || c.phase.ingested
	traces, metrics := c.out.next()
	var md pmetric.Metrics
	if p.final && emit && metrics != nil {
		md = c.metricsLocked(now)
	}
	c.mu.Unlock()

	if emit {
		if err := c.out.emitTraces(ctx, traces, out); err != nil {
			// The pass's journal writes are kept back: the sessions it
			// touched are left behind, so the first pass after the turns
			// are accepted writes their state whole.
			if c.journal != nil {
				c.journal.KeepBack()
			}
			err = c.out.hold(traces, out, err)
			if p.final {
				c.out.shutdownHeld(ctx, c.journal != nil)
			}
			return journal.Write{}, err
		}
		if p.final && metrics != nil {
			c.out.emitMetrics(ctx, metrics, md)
		}
	}
	if c.journal == nil {
		return journal.Write{}, nil
	}
	return c.journal.Start(ctx, ops), nil
}

// finishJournal waits for a pass's journal write (step 4, under no lock).
func (c *core) finishJournal(ctx context.Context, w journal.Write) error {
	if c.journal == nil {
		return nil
	}
	return c.journal.Finish(ctx, w)
}

// consume applies one batch of log records. A journal that must look at
// the engine first (the changelog's read barrier, Serial) has the batch
// decoded inside its pass; otherwise it is decoded next to the pass of the
// batch before, and applied once that one is done.
func (c *core) consume(ctx context.Context, ld plog.Logs) error {
	if c.journal != nil && c.journal.Serial() {
		return c.consumeSerial(ctx, ld)
	}
	var keep map[string]*journal.Kept
	if c.journal != nil {
		keep = map[string]*journal.Kept{}
	}
	d, prev, applied := c.in.next(ctx, ld, keep)
	defer c.in.done(d, applied)
	if prev != nil {
		<-prev
	}
	return c.settle(ctx, pass{change: func(now time.Time) map[string]*journal.Kept {
		c.phase.ingested = true
		for _, code := range d.violations {
			c.engine.RecordViolation(code, now)
		}
		c.tel.Redelivered.Add(ctx, c.redelivered(d.inputs))
		for _, input := range d.inputs {
			c.engine.Ingest(input, now)
		}
		return keep
	}})
}

// consumeSerial is consume with a journal that prepares every batch: its
// step (hand-over, restore) runs in the pass, before the batch is decoded
// and applied. A failed preparation refuses the batch, unapplied.
func (c *core) consumeSerial(ctx context.Context, ld plog.Logs) error {
	var step journal.Step
	return c.settle(ctx, pass{prepare: func(ctx context.Context) error {
		var err error
		step, err = c.journal.BeforeBatch(ctx, ld, c.peek)
		return err
	}, change: func(now time.Time) map[string]*journal.Kept {
		c.phase.ingested = true
		keep := map[string]*journal.Kept{}
		if step != nil {
			step(ctx, sessions{c}, now)
		}
		inputs := c.read(ctx, ld, now, keep, false)
		c.tel.Redelivered.Add(ctx, c.redelivered(inputs))
		for _, input := range inputs {
			c.engine.Ingest(input, now)
		}
		return keep
	}})
}

// read turns a batch of log records into engine inputs (decoder.decode)
// and counts its decoding problems as violations. Callers hold mu; the
// inputs are valid until the next read.
func (c *core) read(ctx context.Context, ld plog.Logs, now time.Time, keep map[string]*journal.Kept, restoring bool) []turnengine.Input {
	d := c.in.read(ctx, ld, keep, restoring)
	for _, code := range d.violations {
		c.engine.RecordViolation(code, now)
	}
	return d.inputs
}

// redelivered counts the redeliveries among a batch's inputs (journal's
// Redelivered; none without a journal). Callers hold mu.
func (c *core) redelivered(inputs []turnengine.Input) int64 {
	if c.journal == nil {
		return 0
	}
	return c.journal.Redelivered(inputs)
}

// sweep closes what has waited long enough: skipped gaps and turns silent
// for dangling_timeout.
//
// A journal shared with other instances prepares the sweep first (the
// changelog syncs its view and lets go of the sessions other instances
// took over, so the sweep never closes a session that is no longer this
// instance's); without its preparation there is no sweep.
func (c *core) sweep(ctx context.Context) {
	var step journal.SweepStep
	err := c.settle(ctx, pass{exclusive: true, prepare: func(ctx context.Context) error {
		if c.journal == nil {
			return nil
		}
		var err error
		step, err = c.journal.BeforeSweep(ctx, c.peek)
		return err
	}, change: func(now time.Time) map[string]*journal.Kept {
		var hold func(string) bool
		if step != nil {
			hold = step(ctx, sessions{c}, now)
		}
		c.engine.SweepHolding(now, hold)
		return nil
	}})
	switch {
	case err == nil || errors.Is(err, errShutdown) || ctx.Err() != nil:
		// (A sweep cut short by the stop: the final pass follows.)
	case errors.Is(err, errHeld), errors.Is(err, journal.ErrWrite):
		// Said once when it began (held.go, the journal); the next pass
		// tries again.
	case errors.Is(err, journal.ErrUnread):
		c.logger.Warn("Changelog unreadable; the sweep waits for it", zap.Error(err))
	case errors.Is(err, journal.ErrOwners):
		c.logger.Warn("The consumer group's coordinator did not answer; the sweep closes no turn as dangling until it does", zap.Error(err))
	default:
		c.logger.Warn("The sweep failed; the next one tries again", zap.Error(err))
	}
}

// start restores the journaled sessions, if there is a journal, and starts
// the sweep and flush loop, once for both instances. Starting before the
// sibling's downstream is safe: receivers start last, and turns closed by
// the restore wait for the first pass after it.
func (c *core) start(ctx context.Context, host component.Host) error {
	c.life.startOnce.Do(func() {
		if pref.UseProtoPooling.IsEnabled() {
			c.life.startErr = errProtoPooling
			return
		}
		// The hand-over counters exist from the start, at zero, in every
		// deployment: an alert on their increase then has a series to
		// evaluate before the first failure (deploy/rules.yaml).
		c.tel.RestoreFailures.Add(ctx, 0)
		c.tel.SessionsRestored.Add(ctx, 0)
		c.tel.TurnsHandedOver.Add(ctx, 0)
		if err := c.openJournal(ctx, host); err != nil {
			c.life.startErr = err
			return
		}
		c.mu.Lock()
		c.phase.running = true
		c.mu.Unlock()
		go c.run()
	})
	return c.life.startErr
}

// shutdown does all the work on the first call. By then every upstream
// component has stopped and the downstream of both instances still runs
// (shutdown is in topological order), so this is the one moment to flush
// open turns; on the last call the sibling's pipeline may be stopped
// already. Its instances then take it out of the registry (detach), even
// if it never started, so instances created later with the same config
// get a fresh core.
func (c *core) shutdown(ctx context.Context) error {
	var errs []error
	c.life.stopOnce.Do(func() {
		c.life.startOnce.Do(func() {}) // never started: also disarms a late start
		c.mu.Lock()
		started := c.phase.running
		c.mu.Unlock()
		if started {
			close(c.life.stop)
			select {
			case <-c.life.done:
			case <-ctx.Done():
				// The loop is stuck in a slow consumer. A metrics flush
				// holds no lock while it waits, so the final pass goes on;
				// a sweep's pass holds passMu, and the final pass waits
				// for it. Either way the deadline is reported.
				errs = append(errs, ctx.Err())
			}
		}

		err := c.settle(ctx, pass{final: true, change: func(now time.Time) map[string]*journal.Kept {
			// With a journal the open turns stay open: the journal has
			// them, and the next start carries them on.
			if c.journal == nil {
				c.engine.Flush(turnengine.CauseShutdown, now)
			}
			return nil
		}})
		errs = append(errs, err)
		// No pass comes after the final one, so the journal is no longer
		// written.
		if c.journal != nil {
			errs = append(errs, c.journal.Close(ctx))
		}
		errs = append(errs, c.tel.Shutdown())
	})
	return errors.Join(errs...)
}

// run is the core's loop: sweep on a short ticker, flush metrics on
// metrics_flush_interval, until stop.
func (c *core) run() {
	defer close(c.life.done)
	// A stop cancels what the loop waits for: a sweep whose journal waits
	// for an unreachable broker ends at once instead of holding up the
	// shutdown (whose final pass writes what it must).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.life.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	sweep := time.NewTicker(c.sweepInterval())
	defer sweep.Stop()
	flush := time.NewTicker(c.cfg.MetricsFlushInterval)
	defer flush.Stop()
	for {
		select {
		case <-c.life.stop:
			return
		case <-sweep.C:
			c.sweep(ctx)
		case <-flush.C:
			c.flushMetrics(ctx)
		}
	}
}

// sweepInterval is a fraction of the shortest wait the engine enforces, at
// most a second: expiry lags its deadline by at most one tick.
func (c *core) sweepInterval() time.Duration {
	d := min(c.cfg.DanglingTimeout/4, c.cfg.GapTimeout, time.Second)
	return max(d, time.Millisecond)
}

// flushMetrics emits the cumulative metrics. It is no pass: it changes no
// state, so it takes mu alone (and the outputs' lock before it), and not
// while the consumer runs.
func (c *core) flushMetrics(ctx context.Context) {
	_, next := c.out.next()
	if next == nil {
		return
	}
	c.mu.Lock()
	md := c.metricsLocked(c.clock())
	c.mu.Unlock()
	c.out.emitMetrics(ctx, next, md)
}

// metricsLocked renders the cumulative metrics at now. Callers hold mu.
func (c *core) metricsLocked(now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	c.series.AppendTo(sm, now, c.engine.OpenTurns())
	return md
}

// record brings self-telemetry up to date with the engine: what it did
// since the last snapshot, and its current sizes for the gauges. Callers
// hold mu.
func (c *core) record(ctx context.Context) {
	prev, cur := c.stats, c.engine.Stats()
	c.stats = cur
	c.gauges.open.Store(int64(c.engine.OpenTurns()))
	c.gauges.sessions.Store(int64(c.engine.Sessions()))
	addDelta(ctx, c.tel.TurnsClosed, cur.TurnsClosed-prev.TurnsClosed)
	addDelta(ctx, c.tel.LateEvents, cur.Late-prev.Late)
	addDelta(ctx, c.tel.TurnsClosedLate, cur.ClosedLate-prev.ClosedLate)
	addDelta(ctx, c.tel.GapsSkipped, cur.GapsSkipped-prev.GapsSkipped)
	addDelta(ctx, c.tel.ReorderOverflows, cur.Overflows-prev.Overflows)
	c.tel.AddDropped(ctx, metadata.ReasonDuplicate, cur.Duplicates-prev.Duplicates)
	c.tel.AddDropped(ctx, metadata.ReasonOrphan, cur.Orphans-prev.Orphans)
	causes := make([]string, 0, len(cur.Dangling))
	for cause := range cur.Dangling {
		causes = append(causes, cause)
	}
	sort.Strings(causes)
	for _, cause := range causes {
		c.tel.AddDangling(ctx, cause, cur.Dangling[cause]-prev.Dangling[cause])
	}
}

func addDelta(ctx context.Context, c metric.Int64Counter, n int64) {
	if n > 0 {
		c.Add(ctx, n)
	}
}
