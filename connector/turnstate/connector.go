package turnstate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/xpdata/pref"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/changelog"
	"github.com/dshtrace/dshtrace/internal/episode"
	"github.com/dshtrace/dshtrace/internal/logrecord"
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
// turn engine, the record reader, the journal and the wiring to the next
// consumers.
//
// Lock order — a lock is only ever taken while holding those above it:
//
//  1. registryMu (share.go): the registry of cores; attach and detach only.
//  2. drainMu: held for one whole pass of settle, from the change to the
//     engine to the end of its journal write, including the calls to the
//     traces consumer and the storage extension. It makes the passes
//     strictly one after another.
//  3. mu: the engine, the journal's index and the fields marked below;
//     held for in-memory work only, never while calling a next consumer or
//     the storage extension.
//  4. readMu: the record reader (the sessions' decoders) and the order of
//     the decoded batches. consume decodes a batch holding readMu alone,
//     while the engine may still be busy with the batch before (under
//     drainMu and mu); each batch is then applied in the order it was
//     decoded (applied).
//
// The metrics flush and the ingester check in ConsumeLogs take mu alone, so
// neither waits for a slow traces consumer or storage. The self-telemetry
// gauges take no lock (open and sessions are atomics).
type core struct {
	cfg    *Config
	logger *zap.Logger
	tel    *metadata.Telemetry
	self   component.ID

	drainMu sync.Mutex // see the lock order above

	mu       sync.Mutex // guards everything below up to the blank line
	clock    func() time.Time
	engine   *turnengine.Engine
	series   *turnrender.Metrics // the engine's observer: the cumulative metrics
	stats    turnengine.Stats    // the snapshot last recorded in self-telemetry
	traces   consumer.Traces
	metrics  consumer.Metrics
	ingester *instance
	ingested bool // some batch was consumed
	running  bool // start started the loop
	closed   bool // the final pass ran: no pass after it
	// journal persists the sessions' state through the storage extension
	// (cfg.Storage; nil without one). Its index is updated under mu, its
	// writes are made under drainMu (journal.go).
	journal *journal

	// positions are the session topic's offsets this instance consumed
	// last, guarded by drainMu (handover.go).
	positions positions

	// writing counts the changelog writes started and not yet waited for
	// (journal.go); Add under drainMu, so a pass that must not overlap
	// them (the sweep, the final pass) waits for them there.
	writing sync.WaitGroup
	// inFlight and peakInFlight count the changelog writes started and not
	// yet acknowledged, now and at most.
	inFlight, peakInFlight atomic.Int64

	// The gauges' values, kept current by record (and lag by finishJournal)
	// so the telemetry callback never takes mu.
	open, sessions, lag, heldTurns atomic.Int64
	// view is the changelog, once open, for the view gauges.
	view atomic.Pointer[changelog.Log]
	// asked is when a sweep last asked the group coordinator who owns the
	// partitions (askCoordinator); guarded by drainMu.
	asked time.Time
	// sweepLooked, in tests, runs in a sweep after it looked at the
	// changelog view for the last time: what another instance does then.
	sweepLooked func()

	// journaling is the journal's writes failing: logged once as it begins
	// and ends.
	journaling *episode.Episode

	// held are the turns the traces consumer refused, rendered, offered
	// again at the start of every pass; no pass applies anything while
	// they are held. heldSince is when the refusals began. Both are
	// guarded by drainMu.
	held      *heldTraces
	heldSince time.Time

	readMu sync.Mutex // see the lock order above; guards the three below
	reader *logrecord.Reader
	serial decoded // read's memory (batch.go)
	// applied is closed when the batch decoded last has been applied (or
	// refused): the next one waits for it, so batches reach the engine in
	// the order they were decoded in.
	applied chan struct{}
	// scratch holds the memory of the batches consume decodes outside mu,
	// at most cap(scratch) at once (the bound of the decoded rows kept).
	scratch chan *decoded

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
	ec.Observer = series
	e := turnengine.New(ec)
	c := &core{
		cfg:       cfg,
		logger:    set.Logger,
		self:      set.ID,
		clock:     clock,
		engine:    e,
		series:    series,
		reader:    logrecord.NewReader(cfg.MaxSessions),
		stats:     e.Stats(),
		positions: positions{},
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	// As many as the file transport's readers (GOMAXPROCS+1): none of them
	// waits for a scratch while the batches before its own are applied,
	// so the CPUs are kept busy reading and decoding meanwhile.
	c.scratch = make(chan *decoded, runtime.GOMAXPROCS(0)+1)
	for range cap(c.scratch) {
		c.scratch <- new(decoded)
	}
	tel, err := metadata.NewTelemetry(set.TelemetrySettings, metadata.Gauges{
		TurnsOpen:    c.open.Load,
		SessionsOpen: c.sessions.Load,
		JournalLag:   c.lag.Load,
		TurnsHeld:    c.heldTurns.Load,
		View: func() (int64, int64, int64, bool) {
			l := c.view.Load()
			if l == nil {
				return 0, 0, 0, false
			}
			s, b, p := l.View()
			return s, b, p, true
		},
	})
	if err != nil {
		return nil, err
	}
	c.tel = tel
	// The counters of what must stay zero exist from the start, so that an
	// alert on them has a series to watch.
	tel.TurnsLost.Add(context.Background(), 0)
	tel.JournalDamaged.Add(context.Background(), 0)
	tel.ChangelogLost.Add(context.Background(), 0)
	c.journaling = episode.New(set.Logger,
		"Cannot write the journal: batches are refused (their senders retry) until a write lands; the sessions concerned are rewritten whole then",
		"The journal is written again")
	return c, nil
}

// A pass is one trip along the drain → emit → journal path (settle).
type pass struct {
	// prepare runs first, under drainMu alone: it may wait for the network
	// (the changelog view's sync); an error ends the pass unapplied.
	prepare func(ctx context.Context) error
	// change applies what the pass is for to the engine. It runs under mu
	// and returns the records to journal, by session (nil for none).
	change func(now time.Time) map[string]*kept
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
//  1. under drainMu and mu: refuse if the core is closed (errShutdown),
//     apply the change, drain the turns it closed, work out the journal
//     writes that bring the journal up to date with the engine, and bring
//     self-telemetry up to date;
//  2. under drainMu: hand the drained turns to the traces consumer (and
//     for the final pass the metrics to the metrics consumer);
//  3. under drainMu: start the journal write, in one storage batch;
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

// settleOrdered is settle's steps 1 to 3, under drainMu.
func (c *core) settleOrdered(ctx context.Context, p pass) (journalWrite, error) {
	c.drainMu.Lock()
	defer c.drainMu.Unlock()
	if p.exclusive || p.final {
		c.writing.Wait()
	}
	if err := c.offerHeld(ctx); err != nil {
		if p.final {
			c.mu.Lock()
			c.closed = true
			c.mu.Unlock()
			c.shutdownHeld(ctx)
		}
		return journalWrite{}, err
	}
	if p.prepare != nil {
		if err := p.prepare(ctx); err != nil {
			return journalWrite{}, err
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return journalWrite{}, errShutdown
	}
	if p.final {
		c.closed = true
	}
	now := c.clock()
	keep := p.change(now)
	var turns []*turnengine.Turn
	if !p.hold {
		turns = c.engine.Drain()
	}
	ops := c.journalOps(keep, turns)
	c.record(ctx)
	// A core that never started has seen no data in a running collector
	// (receivers start last), and its downstream may never have started:
	// then there is nothing to emit to.
	emit := c.running || c.ingested
	traces, metrics := c.traces, c.metrics
	var md pmetric.Metrics
	if p.final && emit && metrics != nil {
		md = c.metricsLocked(now)
	}
	c.mu.Unlock()

	if emit {
		if err := c.emitTraces(ctx, traces, turns); err != nil {
			err = c.hold(ctx, traces, turns, err)
			if p.final {
				c.shutdownHeld(ctx)
			}
			return journalWrite{}, err
		}
		if p.final && metrics != nil {
			c.emitMetrics(ctx, metrics, md)
		}
	}
	return c.startJournal(ctx, ops), nil
}

// consume applies one batch of log records. With a changelog the view is
// synced first; sessions other instances took over are let go of, and the
// batch's sessions the engine does not hold are restored from it
// (handover.go). A failed sync refuses the batch, unapplied.
func (c *core) consume(ctx context.Context, ld plog.Logs) error {
	if c.journal != nil && c.journal.log != nil {
		return c.consumeSynced(ctx, ld)
	}
	// Without a changelog nothing needs the engine before the batch is
	// decoded: decode it now, next to the pass of the batch before, and
	// apply it once that one is done.
	d := <-c.scratch
	defer func() { c.scratch <- d }()
	var keep map[string]*kept
	if c.journal != nil {
		keep = map[string]*kept{}
	}
	c.readMu.Lock()
	c.decode(ctx, ld, d, keep, false)
	prev, applied := c.applied, make(chan struct{})
	c.applied = applied
	c.readMu.Unlock()
	defer close(applied)
	if prev != nil {
		<-prev
	}
	return c.settle(ctx, pass{change: func(now time.Time) map[string]*kept {
		c.ingested = true
		for _, code := range d.violations {
			c.engine.RecordViolation(code, now)
		}
		c.tel.Redelivered.Add(ctx, c.journal.redelivered(d.inputs))
		for _, input := range d.inputs {
			c.engine.Ingest(input, now)
		}
		return keep
	}})
}

// consumeSynced is consume with a changelog: the view is synced, sessions
// handed over and restored before the batch is decoded, all in one pass.
func (c *core) consumeSynced(ctx context.Context, ld plog.Logs) error {
	var (
		synced   time.Duration
		source   string // the session topic's partition ("" unknown)
		assigned bool   // the partition's first batch here after a gap
	)
	return c.settle(ctx, pass{prepare: func(ctx context.Context) error {
		var follows bool
		follows, source = c.positions.follows(ctx)
		assigned = !follows && source != ""
		if follows && !c.restores(ld) {
			return nil
		}
		c.follow(source)
		// The view is read to the topic's end once this instance's own
		// writes are in it: a session let go of while its last write was
		// in flight is then restored from that write.
		c.writing.Wait()
		var err error
		if synced, err = c.syncView(ctx); err != nil {
			if ctx.Err() == nil {
				c.tel.RestoreFailures.Add(ctx, 1)
			} // else the receiver gave the batch up (its partition was revoked meanwhile): no failure of the changelog
			return errRestore(err)
		}
		c.tel.ViewSyncs.Add(ctx, 1)
		return nil
	}, change: func(now time.Time) map[string]*kept {
		c.ingested = true
		var keep map[string]*kept
		if c.journal != nil {
			keep = map[string]*kept{}
		}
		c.handOver(ctx, source)
		start := time.Now()
		n := c.restoreFirstSight(ctx, ld, now)
		if c.journal.resumeOwn {
			c.journal.resumeOwn = false
			n += c.resumeOwn(ctx, now)
		}
		if assigned {
			n += c.restorePartition(ctx, source, now)
		}
		if n > 0 {
			c.tel.SessionsRestored.Add(ctx, int64(n))
			c.tel.RestoreDuration.Record(ctx, (synced + time.Since(start)).Seconds())
		}
		if source != "" {
			for _, id := range batchSessions(ld) {
				c.journal.source[id] = source
			}
		}
		inputs := c.read(ctx, ld, now, keep, false)
		c.tel.Redelivered.Add(ctx, c.journal.redelivered(inputs))
		for _, input := range inputs {
			c.engine.Ingest(input, now)
		}
		return keep
	}})
}

// sweep closes what has waited long enough: skipped gaps and turns silent
// for dangling_timeout.
//
// With a changelog the view is synced first and the sessions other
// instances took over are let go of, so the sweep never closes a session
// that is no longer this instance's; without a sync there is no sweep.
func (c *core) sweep(ctx context.Context) {
	synced, asked := true, true
	var owned ownership
	err := c.settle(ctx, pass{exclusive: true, prepare: func(ctx context.Context) error {
		if _, err := c.syncView(ctx); err != nil {
			synced = false
			return err
		}
		var err error
		if owned, err = c.askCoordinator(ctx, c.clock()); err != nil {
			asked = false
			return err
		}
		if len(owned.adopted) > 0 {
			c.adopt(owned.adopted)
			if _, err := c.syncView(ctx); err != nil {
				synced = false
				return err
			}
		}
		return nil
	}, change: func(now time.Time) map[string]*kept {
		c.handOver(ctx, "")
		if c.sweepLooked != nil {
			c.sweepLooked()
		}
		if len(owned.moved) > 0 {
			var h handed
			c.dropPartitions(ctx, owned.moved, &h)
			h.report(ctx, c)
		}
		if n := 0; len(owned.adopted) > 0 {
			for _, src := range owned.adopted {
				n += c.restorePartition(ctx, src, now)
			}
			c.tel.SessionsRestored.Add(ctx, int64(n))
			c.logger.Info("Partitions assigned here by the consumer group, before any batch of them: their open turns restored",
				zap.Strings("partitions", owned.adopted), zap.Int("sessions", n))
		}
		var hold func(string) bool
		if len(owned.held) > 0 {
			hold = func(id string) bool { return owned.held[c.journal.source[id]] }
		}
		c.engine.SweepHolding(now, hold)
		return nil
	}})
	switch {
	case err == nil || errors.Is(err, errShutdown):
	case errors.Is(err, errHeld), errors.Is(err, errJournalWrite):
		// Said once when it began (held.go, finishJournal); the next pass
		// tries again.
	case !synced:
		c.logger.Warn("Changelog unreadable; the sweep waits for it", zap.Error(err))
	case !asked:
		c.logger.Warn("The consumer group's coordinator did not answer; the sweep closes no turn as dangling until it does", zap.Error(err))
	default:
		c.logger.Warn("The sweep failed; the next one tries again", zap.Error(err))
	}
}

// start restores the journaled sessions, if there is a storage extension,
// and starts the sweep and flush loop, once for both instances. Starting
// before the sibling's downstream is safe: receivers start last, and turns
// closed by the restore wait for the first pass after it.
func (c *core) start(ctx context.Context, host component.Host) error {
	c.startOnce.Do(func() {
		if pref.UseProtoPooling.IsEnabled() {
			c.startErr = errProtoPooling
			return
		}
		// The hand-over counters exist from the start, at zero, in every
		// deployment: an alert on their increase then has a series to
		// evaluate before the first failure (deploy/rules.yaml).
		c.tel.RestoreFailures.Add(ctx, 0)
		c.tel.SessionsRestored.Add(ctx, 0)
		c.tel.TurnsHandedOver.Add(ctx, 0)
		if id := c.cfg.Storage; id != nil {
			j, err := openJournal(ctx, host, *id, c.self)
			if err != nil {
				c.startErr = err
				return
			}
			if err := c.restore(ctx, j); err != nil {
				c.startErr = fmt.Errorf("turn_state: restore the sessions from %s: %w", id, err)
				return
			}
		}
		if cl := c.cfg.Changelog; cl != nil {
			j, err := openChangelogJournal(ctx, *cl, c.logger)
			if err != nil {
				c.startErr = fmt.Errorf("turn_state: open the changelog: %w", err)
				return
			}
			c.view.Store(j.log)
			if err := c.restore(ctx, j); err != nil {
				j.log.Close()
				c.startErr = fmt.Errorf("turn_state: restore the sessions from the changelog: %w", err)
				return
			}
		}
		c.mu.Lock()
		c.running = true
		c.mu.Unlock()
		go c.run()
	})
	return c.startErr
}

// shutdown does all the work on the first call. By then every upstream
// component has stopped and the downstream of both instances still runs
// (shutdown is in topological order), so this is the one moment to flush
// open turns; on the last call the sibling's pipeline may be stopped
// already. The core leaves the registry even if it never started, so
// instances created later with the same config get a fresh core.
func (c *core) shutdown(ctx context.Context) error {
	var errs []error
	c.stopOnce.Do(func() {
		c.startOnce.Do(func() {}) // never started: also disarms a late start
		c.mu.Lock()
		started := c.running
		c.mu.Unlock()
		if started {
			close(c.stop)
			select {
			case <-c.done:
			case <-ctx.Done():
				// The loop is stuck in a slow consumer. A metrics flush
				// holds no lock while it waits, so the final pass goes on;
				// a sweep's pass holds drainMu, and the final pass waits
				// for it. Either way the deadline is reported.
				errs = append(errs, ctx.Err())
			}
		}

		err := c.settle(ctx, pass{final: true, change: func(now time.Time) map[string]*kept {
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
			errs = append(errs, c.journal.close(ctx))
		}
		errs = append(errs, c.tel.Shutdown())
		detach(c)
	})
	return errors.Join(errs...)
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

// sweepInterval is a fraction of the shortest wait the engine enforces, at
// most a second: expiry lags its deadline by at most one tick.
func (c *core) sweepInterval() time.Duration {
	d := min(c.cfg.DanglingTimeout/4, c.cfg.GapTimeout, time.Second)
	return max(d, time.Millisecond)
}

// emitTraces hands closed turns to the traces consumer, if there is one.
// Called under drainMu, without mu. A refusal is counted and returned.
func (c *core) emitTraces(ctx context.Context, next consumer.Traces, turns []*turnengine.Turn) error {
	if next == nil || len(turns) == 0 {
		return nil
	}
	if err := next.ConsumeTraces(ctx, turnrender.Traces(metadata.ScopeName, turns)); err != nil {
		c.tel.AddEmitFailure(ctx, metadata.SignalTraces)
		return err
	}
	return nil
}

// flushMetrics emits the cumulative metrics. It is no pass: it changes no
// state, so it takes mu alone, and not while the consumer runs.
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

// metricsLocked renders the cumulative metrics at now. Callers hold mu.
func (c *core) metricsLocked(now time.Time) pmetric.Metrics {
	md := pmetric.NewMetrics()
	sm := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(metadata.ScopeName)
	c.series.AppendTo(sm, now, c.engine.OpenTurns())
	return md
}

// emitMetrics hands a metrics snapshot to the metrics consumer. Called
// without mu. A refused snapshot is made good by the next: the metrics
// are cumulative.
func (c *core) emitMetrics(ctx context.Context, next consumer.Metrics, md pmetric.Metrics) {
	if err := next.ConsumeMetrics(ctx, md); err != nil {
		c.tel.AddEmitFailure(ctx, metadata.SignalMetrics)
		c.logger.Warn("Next consumer refused turn metrics; the next flush carries the cumulative values", zap.Error(err))
	}
}

// record brings self-telemetry up to date with the engine: what it did
// since the last snapshot, and its current sizes for the gauges. Callers
// hold mu.
func (c *core) record(ctx context.Context) {
	prev, cur := c.stats, c.engine.Stats()
	c.stats = cur
	c.open.Store(int64(c.engine.OpenTurns()))
	c.sessions.Store(int64(c.engine.Sessions()))
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
