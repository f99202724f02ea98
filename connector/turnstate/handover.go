package turnstate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/changelog"
	"github.com/dshtrace/dshtrace/internal/logrecord"
)

// This file keeps the journal in a compacted Kafka topic (changelog:),
// shared by the instances of one consumer group, and moves sessions
// between them as their partitions move.
//
// The journal protocol is the same as with a storage extension (journal.go:
// the same keys, written in the same pass, at the same point); only the
// idx buckets are gone, as the changelog lists its keys. A session's keys
// share one changelog partition, the one numbered as its session-topic
// partition, so its writes are ordered, and the view knows which instance
// (incarnation) wrote it last. An instance's view reads only the
// partitions of what it consumes (internal/changelog, BySource; follow).
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
//     afresh, not carried on from the state it had when it left
//     (partitions.go).
//
// Why the new owner finds the state it needs: the kafka receiver commits a
// message's offset after ConsumeLogs returned (message_marking after), and
// ConsumeLogs returns after the pass's changelog write was acknowledged.
// So the changelog always holds at least the state up to the committed
// offset, where the new owner starts; what the old owner journaled past it
// comes again and is dropped against the mark (events_redelivered).

// changelogStore is the journal's store on a changelog. source names the
// session topic's partition a session's batches come from ("" unknown):
// its records carry it, so that an instance that is assigned the partition
// finds the partition's sessions in the view (restorePartition).
type changelogStore struct {
	log     *changelog.Log
	timeout time.Duration
	source  func(session string) string
}

func (s *changelogStore) Get(_ context.Context, key string) ([]byte, error) {
	v, _ := s.log.Get(key)
	return v, nil
}

// Batch writes the operations. It does not stop when the caller's context
// is cancelled (the kafka receiver cancels it when the partition is
// revoked): a pass that applied a batch finishes its write.
func (s *changelogStore) Batch(ctx context.Context, ops ...*storage.Operation) error {
	return s.Start(ctx, ops...)()
}

// Start starts the write of the operations and returns what waits for it
// (journal.go, startJournal): the writes of concurrent passes share their
// round trips to the brokers.
func (s *changelogStore) Start(ctx context.Context, ops ...*storage.Operation) func() error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	p := s.log.Start(ctx, s.changelogOps(ops))
	return func() error {
		defer cancel()
		return p.Wait()
	}
}

// Close waits for the writes in flight, then closes the changelog.
func (s *changelogStore) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	err := s.log.Flush(ctx)
	s.log.Close()
	return err
}

// changelogOps are the storage operations as changelog records, each
// naming its session's source.
func (s *changelogStore) changelogOps(ops []*storage.Operation) []changelog.Op {
	cops := make([]changelog.Op, 0, len(ops))
	for _, op := range ops {
		var src string
		if id, ok := sessionOfKey(op.Key); ok && s.source != nil {
			src = s.source(id)
		}
		switch op.Type {
		case storage.Set:
			cops = append(cops, changelog.Op{Key: op.Key, Value: op.Value, Source: src})
		case storage.Delete:
			cops = append(cops, changelog.Op{Key: op.Key, Source: src})
		}
	}
	return cops
}

// sessionGroup is a journal key's session part (`s/"ID"`), which picks its
// changelog partition.
func sessionGroup(key string) string {
	if rest, ok := strings.CutPrefix(key, "s/"); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			return "s/" + q
		}
	}
	return key
}

// sessionOfKey is the session id of a journal key.
func sessionOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(sessionGroup(key), "s/")
	if !ok {
		return "", false
	}
	id, err := strconv.Unquote(rest)
	return id, err == nil
}

// openChangelogJournal opens the changelog and reads it to its end.
func openChangelogJournal(ctx context.Context, cfg ChangelogConfig, logger *zap.Logger) (*journal, error) {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	lc := changelog.Config{
		Brokers: cfg.Brokers, Topic: cfg.Topic, Owner: cfg.Owner,
		Partitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor,
		MaxRecordBytes: cfg.MaxRecordBytes, Group: sessionGroup, Logger: logger,
		BySource: true, // a session's records in its session-topic partition's changelog partition
	}
	if cfg.TLS != nil {
		tlsCfg, err := cfg.TLS.LoadTLSConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("changelog::tls: %w", err)
		}
		lc.TLS = tlsCfg
	}
	if cfg.Auth != nil {
		m, err := cfg.Auth.mechanism()
		if err != nil {
			return nil, err
		}
		lc.SASL = m
	}
	log, err := changelog.Open(ctx, lc)
	if err != nil {
		return nil, err
	}
	if err := log.Sync(ctx); err != nil {
		log.Close()
		return nil, err
	}
	store := &changelogStore{log: log, timeout: cfg.Timeout}
	j := newJournal(store)
	j.log, j.owner = log, cfg.Owner
	store.source = func(id string) string { return j.source[id] }
	return j, nil
}

// syncView brings the changelog view up to the topic's end (a no-op
// without a changelog) and returns how long it took.
func (c *core) syncView(ctx context.Context) (time.Duration, error) {
	if c.journal == nil || c.journal.log == nil {
		return 0, nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Changelog.withDefaults().Timeout)
	defer cancel()
	err := c.journal.log.Sync(ctx)
	if why := c.journal.log.Lost(); why != "" {
		c.changelogLost(ctx, why)
	}
	return time.Since(start), err
}

// changelogLost is said when the changelog topic was found deleted or
// created again: what it held is gone, so a partition that moves now
// finds no state for its open turns, and a restart resumes none. Every
// key of the sessions this instance holds is written again from the view
// (which keeps what the topic held last), and their entries once more with
// the next pass (behind); the sessions other instances hold are written
// again by them. Callers hold drainMu.
func (c *core) changelogLost(ctx context.Context, why string) {
	c.mu.Lock()
	n := len(c.journal.sessions)
	var ops []*storage.Operation
	for id := range c.journal.sessions {
		// Every key of the session as the view last read it — its
		// entry, header and the chunks of its open turn — written again.
		keys, _ := c.journal.log.Keys(sessionKey(id))
		for _, k := range keys {
			if v, ok := c.journal.log.Get(k); ok {
				ops = append(ops, storage.SetOperation(k, v))
			}
		}
		c.journal.behind[id] = struct{}{}
	}
	c.lag.Store(int64(len(c.journal.behind)))
	open := c.engine.OpenTurns()
	c.mu.Unlock()
	if err := c.journal.store.Batch(ctx, ops...); err != nil {
		c.logger.Warn("Changelog: the sessions' records could not be written again; their entries are, with the next pass", zap.Error(err))
	}
	c.tel.ChangelogLost.Add(ctx, 1)
	c.logger.Error("Changelog topic LOST: what it held is gone (deleted, or a broker lost its data). "+
		"Until every instance has written its sessions again, a partition that changes owner loses its open turns and a restart resumes none; "+
		"this instance writes its sessions again with its next batch. Check the topic's retention and the brokers' storage",
		zap.String("topic", c.cfg.Changelog.withDefaults().Topic), zap.String("found", why),
		zap.Int("sessions_rewritten", n), zap.Int("open_turns", open))
}

// handOver lets go of the sessions another instance wrote since the last
// pass: no span, no metric, no journal write. A session of a partition
// this instance consumed that another instance wrote means the partition
// moved there: every session of that partition is let go of, and the view
// stops reading it (unless it is current, the source of the batch of this
// pass: then this instance has it back, and the sessions written
// elsewhere are restored from the view). Callers hold drainMu and mu.
func (c *core) handOver(ctx context.Context, current string) {
	j := c.journal
	if j == nil || j.log == nil {
		return
	}
	var h handed
	moved := map[string]bool{}
	for _, g := range j.log.DrainForeign() {
		id, ok := sessionOfKey(g)
		if !ok {
			continue
		}
		if src := j.source[id]; src != "" && src != current {
			if _, held := c.engine.Mark(id); held {
				moved[src] = true
			}
		}
		h.add(c.letGo(id))
	}
	var sources []string
	for src := range moved {
		sources = append(sources, src)
	}
	c.dropPartitions(ctx, sources, &h)
	h.report(ctx, c)
}

// handed counts the sessions let go of in a pass, and their open turns.
type handed struct{ sessions, turns int64 }

func (h *handed) add(held, open bool) {
	if held {
		h.sessions++
	}
	if open {
		h.turns++
	}
}

func (h *handed) report(ctx context.Context, c *core) {
	if h.sessions > 0 {
		c.tel.TurnsHandedOver.Add(ctx, h.turns)
		c.logger.Info("Sessions taken over by another instance let go of", zap.Int64("sessions", h.sessions), zap.Int64("open_turns", h.turns))
	}
}

// letGo stops tracking a session another instance carries on, writing
// nothing; it reports whether it was tracked, and had a turn open.
// Callers hold mu.
func (c *core) letGo(id string) (held, open bool) {
	j := c.journal
	open, inEngine := c.engine.Release(id)
	_, journaled := j.sessions[id]
	if !inEngine && !journaled {
		return false, false
	}
	j.release(id)
	c.readMu.Lock()
	c.reader.Forget(id)
	c.readMu.Unlock()
	return true, open
}

// resumeOwn resumes the sessions an earlier start of this owner wrote
// last that the engine does not hold, as a start does when its view holds
// the whole changelog. Callers hold mu; the view was synced in this pass.
func (c *core) resumeOwn(ctx context.Context, now time.Time) int {
	j := c.journal
	var ids []string
	j.log.Groups(func(g, writer string) {
		if id, ok := sessionOfKey(g); ok && changelog.OwnerOf(writer) == j.owner && writer != j.log.Writer() {
			ids = append(ids, id)
		}
	})
	slices.Sort(ids)
	n := 0
	for _, id := range ids {
		if r, ok := c.readToResume(ctx, id); ok {
			j.adopt(r)
			c.resume(ctx, r, now)
			n++
		}
	}
	return n
}

// readToResume reads from the journal a session the engine does not hold:
// false when it holds it, or the journal has no entry of it, or one that
// cannot be decoded — that would fail the same way on every retry, so the
// session starts afresh instead (counted, and said). Callers hold mu.
func (c *core) readToResume(ctx context.Context, id string) (restored, bool) {
	if _, held := c.engine.Mark(id); held {
		return restored{}, false
	}
	r, ok, err := c.journal.readSession(ctx, id)
	if err != nil {
		c.tel.RestoreFailures.Add(ctx, 1)
		c.logger.Error("Session journal unreadable; the session starts afresh", zap.String("session", id), zap.Error(err))
		return restored{}, false
	}
	return r, ok
}

// restorePartition resumes, when a batch is the first of its partition
// after an assignment (or a gap), every session of that partition that the
// view holds with a turn open and the engine does not: the partition's
// state, not only the sessions its next batches happen to bring. A session
// whose partition moved here and that gets no other event is so still
// closed as dangling after dangling_timeout, here; and the rewrite of its
// entry tells its old owner to let it go. Callers hold mu; the view was
// synced in this pass.
func (c *core) restorePartition(ctx context.Context, source string, now time.Time) int {
	j := c.journal
	groups, _ := j.log.GroupsFrom(source)
	n := 0
	for _, g := range groups {
		id, ok := sessionOfKey(g)
		if !ok {
			continue
		}
		r, ok := c.readToResume(ctx, id)
		if !ok || r.entry.Mark.Open == 0 {
			continue // nothing open: its next batch, if any, restores it on sight
		}
		j.adopt(r)
		j.source[id] = source
		c.resume(ctx, r, now)
		n++
	}
	return n
}

// restores reports whether a batch brings a session the engine does not
// hold and the changelog view has keys of: a session restored from the
// changelog is always restored after the read barrier, so that it carries
// on from the session's latest write, whoever made it. Callers hold
// drainMu.
func (c *core) restores(ld plog.Logs) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range batchSessions(ld) {
		if _, held := c.engine.Mark(id); held {
			continue
		}
		if keys, _ := c.journal.log.Keys(sessionKey(id)); len(keys) > 0 {
			return true
		}
	}
	return false
}

// restoreFirstSight resumes, before a batch is applied, each session of
// the batch that the engine does not hold and the changelog has a journal
// of. Callers hold mu; the view was synced in this pass.
func (c *core) restoreFirstSight(ctx context.Context, ld plog.Logs, now time.Time) int {
	j := c.journal
	if j == nil || j.log == nil {
		return 0
	}
	n := 0
	for _, id := range batchSessions(ld) {
		if keys, _ := j.log.Keys(sessionKey(id)); len(keys) == 0 {
			continue // a new session
		}
		r, ok := c.readToResume(ctx, id)
		if !ok {
			continue
		}
		j.adopt(r)
		c.resume(ctx, r, now)
		n++
	}
	return n
}

// resume starts tracking a session read back from the journal: its mark
// first, then its records from the mark's Retain on, re-applied without
// being counted again; it returns the events re-applied. Callers hold mu.
func (c *core) resume(ctx context.Context, r restored, now time.Time) int64 {
	var events int64
	c.engine.Resume(r.id, r.entry.Mark, now)
	if r.entry.Mark.Started {
		c.journal.resumed[r.id] = r.entry.Mark.Next
	}
	for _, in := range c.read(ctx, r.logs, now, nil, true) {
		if in.Event.Seq >= r.entry.Mark.Retain {
			c.engine.Ingest(in, now)
			events++
		}
	}
	return events
}

// batchSessions lists the sessions of a batch's records, in first-seen
// order, read as logrecord.Reader reads them.
func batchSessions(ld plog.Logs) []string {
	var out []string
	seen := map[string]bool{}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		resID := ""
		if v, ok := rl.Resource().Attributes().Get(logrecord.AttrSessionID); ok {
			resID = v.Str()
		}
		sls := rl.ScopeLogs()
		for k := 0; k < sls.Len(); k++ {
			lrs := sls.At(k).LogRecords()
			for m := 0; m < lrs.Len(); m++ {
				attrs := lrs.At(m).Attributes()
				id := ""
				if v, ok := attrs.Get(logrecord.AttrSessionID); ok && v.Str() != "" {
					id = v.Str()
				} else if resID != "" {
					id = resID
				} else if v, ok := attrs.Get("sessionId"); ok {
					id = v.Str()
				}
				if id != "" && !seen[id] {
					seen[id] = true
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// errRestore wraps a failed view sync of a batch: the batch is refused, so
// the receiver retries it.
func errRestore(err error) error {
	return fmt.Errorf("turn_state: read the changelog before applying the batch (it is retried): %w", err)
}
