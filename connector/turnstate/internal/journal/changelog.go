package journal

// This file keeps the journal in a compacted Kafka topic (changelog:),
// shared by the instances of one consumer group; handover.go moves
// sessions between them as their partitions move, partitions.go is what
// an instance knows of the session topic's partitions.
//
// The journal protocol is the same as with a storage extension (ledger:
// the same keys, written in the same pass, at the same point); only the
// idx buckets are gone, as the changelog lists its keys. A session's keys
// share one changelog partition, the one numbered as its session-topic
// partition, so its writes are ordered, and the view knows which instance
// (incarnation) wrote it last. An instance's view reads only the
// partitions of what it consumes (changelog.Config.BySource; follow).
// Then:
//
//   - restore on first sight: a batch that brings a session the engine does
//     not hold, after the view is synced up to the topic's end, resumes it
//     from its journal in the view, as a start resumes from a storage
//     journal, before the batch is applied. The pass then rewrites its
//     entry, so the changelog names this instance as its writer.
//   - hand-over: a session this instance holds that the view shows written
//     by another instance is let go of, silently: that instance took it
//     over (its partition moved) and carries its open turn on.
//   - every sweep, and every batch that may follow another instance's
//     work (the first of its partition here, after a gap), first syncs the
//     view, so no pass works on a session another instance took over
//     before the pass began: the sweep never closes such a session as
//     dangling, and a session whose partition comes back is restored
//     afresh, not carried on from the state it had when it left.
//
// Why the new owner finds the state it needs: the kafka receiver commits a
// message's offset after ConsumeLogs returned (message_marking after), and
// ConsumeLogs returns after the pass's changelog write was acknowledged.
// So the changelog always holds at least the state up to the committed
// offset, where the new owner starts; what the old owner journaled past it
// comes again and is dropped against the mark (events_redelivered).

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog"
	"github.com/dshtrace/dshtrace/internal/logrecord"
)

// ChangelogOptions configure the changelog journal.
type ChangelogOptions struct {
	Options
	// Log is the changelog's connection: brokers, topic, owner, TLS, SASL.
	// Its Group and BySource are the journal's and set by it.
	Log changelog.Config
	// Timeout bounds each write and each read up to the topic's end.
	Timeout time.Duration
	// ConsumerGroup is the kafka receiver's group_id ("" unset).
	ConsumerGroup string
	// SweepInterval is how often the connector sweeps: the coordinator is
	// asked about turns due within it.
	SweepInterval time.Duration
	// Clock is the connector's clock.
	Clock func() time.Time
}

// Changelog is the journal in a compacted Kafka topic.
type Changelog struct {
	*ledger
	log  *changelog.Log
	opts ChangelogOptions

	mu sync.Mutex // a leaf: guards the fields below, never held while calling out
	// positions are the session topic's offsets this instance consumed
	// last; source is the partition each session's batches come from,
	// written with its records.
	positions positions
	source    map[string]string
	// readsAll: the view reads every partition (a batch came without
	// partition metadata); resumeOwn: the next batch resumes this owner's
	// sessions from it; warnedShared: said that session-topic partitions
	// share changelog partitions; warnedStatic: said that consumer_group's
	// members have no instance ids.
	readsAll, resumeOwn, warnedShared, warnedStatic bool
	// asked is when the group coordinator was asked last.
	asked time.Time

	// SweepLooked, in tests, runs in a sweep after it looked at the view
	// for the last time: what another instance does then.
	SweepLooked func()
}

var _ Journal = (*Changelog)(nil)

// OpenChangelog opens the changelog and reads it to its end.
func OpenChangelog(ctx context.Context, o ChangelogOptions) (*Changelog, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	lc := o.Log
	lc.Group = SessionGroup
	lc.BySource = true // a session's records in its session-topic partition's changelog partition
	lc.Logger = o.Logger
	log, err := changelog.Open(ctx, lc)
	if err != nil {
		return nil, err
	}
	if err := log.Sync(ctx); err != nil {
		log.Close()
		return nil, err
	}
	c := &Changelog{log: log, opts: o, positions: positions{}, source: map[string]string{}}
	c.ledger = newLedger(&changelogStore{c: c}, false, o.Options)
	return c, nil
}

// Log is the changelog (tests and the view gauges read it).
func (c *Changelog) Log() *changelog.Log { return c.log }

// View is what the view holds: sessions, bytes and partitions read.
func (c *Changelog) View() (sessions, bytes, partitions int64) { return c.log.View() }

// Load implements Journal: the sessions an earlier start of this owner
// wrote last (the others are resumed by whichever instance their batches
// reach). Damaged values are reported, not deleted: the next write of
// their session replaces them.
func (c *Changelog) Load(ctx context.Context) ([]Restored, error) {
	var ids []string
	c.log.Groups(func(g, writer string) {
		if id, ok := sessionOfKey(g); ok && changelog.OwnerOf(writer) == c.opts.Log.Owner {
			ids = append(ids, id)
		}
	})
	slices.Sort(ids)
	rs, bad, err := c.readAll(ctx, ids, true)
	if err != nil {
		return nil, err
	}
	c.report(ctx, bad)
	return rs, nil
}

// Serial implements Journal: the read barrier comes before a batch is
// decoded.
func (*Changelog) Serial() bool { return true }

// BeforeBatch implements Journal: the view is synced when the batch may
// follow another instance's work (the first of its partition here, or a
// session the engine does not hold that the view has); the step then lets
// go of what others took over and restores what the batch needs.
func (c *Changelog) BeforeBatch(ctx context.Context, ld plog.Logs, peek Peek) (Step, error) {
	var synced time.Duration
	follows, source := c.follows(ctx)
	assigned := !follows && source != ""
	if !follows || c.restores(ctx, ld, peek) {
		c.follow(source)
		// The view is read to the topic's end once this instance's own
		// writes are in it: a session let go of while its last write was
		// in flight is then restored from that write.
		c.Wait()
		var err error
		if synced, err = c.syncView(ctx, peek); err != nil {
			if ctx.Err() == nil {
				c.Telemetry.RestoreFailures.Add(ctx, 1)
			} // else the receiver gave the batch up (its partition was revoked meanwhile): no failure of the changelog
			return nil, errRestore(err)
		}
		c.Telemetry.ViewSyncs.Add(ctx, 1)
	}
	return func(ctx context.Context, e Engine, now time.Time) {
		c.handOver(ctx, e, source)
		start := time.Now()
		n := c.restoreFirstSight(ctx, e, ld, now)
		c.mu.Lock()
		own := c.resumeOwn
		c.resumeOwn = false
		c.mu.Unlock()
		if own {
			n += c.resumeOwnSessions(ctx, e, now)
		}
		if assigned {
			n += c.restorePartition(ctx, e, source, now)
		}
		if n > 0 {
			c.Telemetry.SessionsRestored.Add(ctx, int64(n))
			c.Telemetry.RestoreDuration.Record(ctx, (synced + time.Since(start)).Seconds())
		}
		if source != "" {
			c.mu.Lock()
			for _, id := range BatchSessions(ld, logrecord.ClientFromContext(ctx)) {
				c.source[id] = source
			}
			c.mu.Unlock()
		}
	}, nil
}

// BeforeSweep implements Journal: the view is synced and, with
// consumer_group, the coordinator asked, so that the sweep never closes a
// session that is no longer this instance's.
func (c *Changelog) BeforeSweep(ctx context.Context, peek Peek) (SweepStep, error) {
	if _, err := c.syncView(ctx, peek); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnread, err)
	}
	owned, err := c.askCoordinator(ctx, peek)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOwners, err)
	}
	if len(owned.adopted) > 0 {
		c.adopt(owned.adopted)
		if _, err := c.syncView(ctx, peek); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnread, err)
		}
	}
	return func(ctx context.Context, e Engine, now time.Time) func(string) bool {
		c.handOver(ctx, e, "")
		if c.SweepLooked != nil {
			c.SweepLooked()
		}
		if len(owned.moved) > 0 {
			var h handed
			c.dropPartitions(e, owned.moved, &h)
			h.report(ctx, c)
		}
		if len(owned.adopted) > 0 {
			n := 0
			for _, src := range owned.adopted {
				n += c.restorePartition(ctx, e, src, now)
			}
			c.Telemetry.SessionsRestored.Add(ctx, int64(n))
			c.Logger.Info("Partitions assigned here by the consumer group, before any batch of them: their open turns restored",
				zap.Strings("partitions", owned.adopted), zap.Int("sessions", n))
		}
		if len(owned.held) == 0 {
			return nil
		}
		return func(id string) bool { return owned.held[c.sourceOf(id)] }
	}, nil
}

// Update implements Journal. A forgotten session's source goes with it.
func (c *Changelog) Update(mark MarkOf, ids []string, batch map[string]*Kept, forgotten []string) []*storage.Operation {
	if len(forgotten) > 0 {
		c.mu.Lock()
		for _, id := range forgotten {
			delete(c.source, id)
		}
		c.mu.Unlock()
	}
	return c.ledger.Update(mark, ids, batch, forgotten)
}

// sourceOf is the session topic's partition a session's batches come from
// ("" unknown).
func (c *Changelog) sourceOf(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.source[id]
}

// syncView brings the view up to the topic's end and returns how long it
// took; a topic found lost is said, and this instance's sessions written
// again.
func (c *Changelog) syncView(ctx context.Context, peek Peek) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	err := c.log.Sync(ctx)
	if why := c.log.Lost(); why != "" {
		c.lost(ctx, why, peek)
	}
	return time.Since(start), err
}

// lost is said when the changelog topic was found deleted or created
// again: what it held is gone, so a partition that moves now finds no
// state for its open turns, and a restart resumes none. Every key of the
// sessions this instance holds is written again from the view (which
// keeps what the topic held last), and their entries once more with the
// next pass (behind); the sessions other instances hold are written again
// by them.
func (c *Changelog) lost(ctx context.Context, why string, peek Peek) {
	ids := c.Sessions()
	var ops []*storage.Operation
	for _, id := range ids {
		// Every key of the session as the view last read it — its
		// entry, header and the chunks of its open turn — written again.
		keys, _ := c.log.Keys(SessionKey(id))
		for _, k := range keys {
			if v, ok := c.log.Get(k); ok {
				ops = append(ops, storage.SetOperation(k, v))
			}
		}
	}
	c.markBehind(ids)
	var open int
	peek(func(e Engine) { open = e.OpenTurns() })
	if wait, _ := (&changelogStore{c: c}).start(ctx, ops, false); wait != nil {
		if err := wait(); err != nil {
			c.Logger.Warn("Changelog: the sessions' records could not be written again; their entries are, with the next pass", zap.Error(err))
		}
	}
	c.Telemetry.ChangelogLost.Add(ctx, 1)
	c.Logger.Error("Changelog topic LOST: what it held is gone (deleted, or a broker lost its data). "+
		"Until every instance has written its sessions again, a partition that changes owner loses its open turns and a restart resumes none; "+
		"this instance writes its sessions again with its next batch. Check the topic's retention and the brokers' storage",
		zap.String("topic", c.opts.Log.Topic), zap.String("found", why),
		zap.Int("sessions_rewritten", len(ids)), zap.Int("open_turns", open))
}

// changelogStore is the changelog as the journal's store. Each record
// names its session's source, so that an instance that is assigned the
// partition finds the partition's sessions in the view (restorePartition).
type changelogStore struct{ c *Changelog }

func (s *changelogStore) Get(_ context.Context, key string) ([]byte, error) {
	v, _ := s.c.log.Get(key)
	return v, nil
}

// Start starts the write of the operations and returns what waits for it:
// the writes of concurrent passes share their round trips to the brokers.
// It does not stop when the caller's context is cancelled (the kafka
// receiver cancels it when the partition is revoked): a pass that applied
// a batch finishes its write.
func (s *changelogStore) Start(ctx context.Context, ops []*storage.Operation) (func() error, bool) {
	return s.start(ctx, ops, true)
}

// start is Start; count: the records and bytes written are counted.
func (s *changelogStore) start(ctx context.Context, ops []*storage.Operation, count bool) (func() error, bool) {
	c := s.c
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.Timeout)
	cops, bytes := s.changelogOps(ops)
	p := c.log.Start(ctx, cops)
	return func() error {
		defer cancel()
		err := p.Wait()
		if err == nil && count {
			c.Telemetry.ChangelogRecords.Add(ctx, int64(len(ops)))
			c.Telemetry.ChangelogBytes.Add(ctx, bytes)
		}
		return err
	}, true
}

// Close waits for the writes in flight, then closes the changelog.
func (s *changelogStore) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.c.opts.Timeout)
	defer cancel()
	err := s.c.log.Flush(ctx)
	s.c.log.Close()
	return err
}

// changelogOps are the storage operations as changelog records, each
// naming its session's source, and the bytes they carry.
func (s *changelogStore) changelogOps(ops []*storage.Operation) ([]changelog.Op, int64) {
	c := s.c
	writer := int64(len(changelog.WriterHeader) + len(c.log.Writer()))
	cops := make([]changelog.Op, 0, len(ops))
	var bytes int64
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, op := range ops {
		var src string
		if id, ok := sessionOfKey(op.Key); ok {
			src = c.source[id]
		}
		bytes += int64(len(op.Key)+len(op.Value)) + writer
		if src != "" {
			bytes += int64(len(changelog.SourceHeader) + len(src))
		}
		switch op.Type {
		case storage.Set:
			cops = append(cops, changelog.Op{Key: op.Key, Value: op.Value, Source: src})
		case storage.Delete:
			cops = append(cops, changelog.Op{Key: op.Key, Source: src})
		}
	}
	return cops, bytes
}

// errRestore wraps a failed view sync of a batch: the batch is refused, so
// the receiver retries it.
func errRestore(err error) error {
	return fmt.Errorf("turn_state: read the changelog before applying the batch (it is retried): %w", err)
}
