package turnstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/changelog"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/storageclient"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// This file is the journal: what is written, when, and how it is replayed
// at start.
//
// The journal keeps, through a storage extension, what the engine needs to
// carry every session on after a restart, crash included: each session's
// Mark (where its seqs stand, the last turn it closed, the model in use)
// and the records from the Mark's Retain on — the open turn's so far, and
// any held in the reorder window. On start the connector resumes each
// session from its Mark and re-reads those records, so a turn open at the
// stop is rebuilt and closes once, with all its spans, when its turn/end
// arrives; records delivered again after the restart are duplicates.
//
// Layout (the storage client is a key-value store without listing):
//
//	idx/NN           JSON array of the session ids in bucket NN (of 64)
//	s/"ID"           JSON journalEntry: the Mark and the chunks kept
//	s/"ID"/h         the session's header record (plog protobuf)
//	s/"ID"/c/N       chunk N: records of one batch from Retain on (plog protobuf)
//
// Ids are quoted (strconv.Quote) so no id's keys can collide with another's.
//
// When: every pass of settle (connector.go) — a batch, a sweep, the
// shutdown, the restore — ends with one storage batch that brings the
// journal up to date with the engine for the sessions the pass touched:
// their marks, the new chunk of each (the batch's records from Retain
// on), the chunks Retain has passed deleted, the forgotten sessions
// deleted. It is written after the pass emitted its turns, so the journal
// lets go of a turn only once it is out, and before the batch is
// acknowledged, so the receiver checkpoints only what is journaled.
//
// Replay: start loads every session (load), and the restore pass resumes
// each from its Mark and re-reads its header and chunks, applying the
// events from Retain on without counting them again (restore).
type journal struct {
	store journalStore
	// indexed: the store cannot list its keys, so the journal keeps the
	// idx buckets (a storage extension); a changelog lists them itself.
	indexed bool
	// log is the changelog behind store, nil for a storage extension.
	log *changelog.Log
	// owner is the changelog owner name: at start the journal resumes the
	// sessions an earlier start of this owner wrote last.
	owner    string
	sessions map[string]*journalEntry
	buckets  [journalBuckets]map[string]struct{}

	// Guarded by drainMu (every update and write is made in a pass):
	// touched are the sessions the pending write (the last update's
	// operations) brings up to date; behind those whose last write failed,
	// rewritten in full by the next update. The core's lag mirrors
	// len(behind) for the journal_lag gauge.
	touched []string
	behind  map[string]struct{}
	// source is, with a changelog, the session topic's partition each
	// session's batches come from (handover.go), written with its records.
	source map[string]string
	// readsAll: the changelog view reads every partition (a batch came
	// without partition metadata); resumeOwn: the next pass resumes this
	// owner's sessions from it; warnedShared: said that session-topic
	// partitions share changelog partitions. Guarded by drainMu.
	// warnedStatic: said that consumer_group's members have no instance ids.
	readsAll, resumeOwn, warnedShared, warnedStatic bool

	// resumed is, per session restored at start, the first seq the journal
	// had not applied (its Mark's Next): events below it delivered again
	// after the restart are redeliveries. A session leaves it with its
	// first event at or past that seq. Guarded by mu.
	resumed map[string]int64
}

const journalBuckets = 64

// journalEntry is one session's state in the journal.
type journalEntry struct {
	Mark turnengine.Mark `json:"mark"`
	// Chunks are the chunks kept, in write order, with the highest seq of
	// each: a chunk goes when Retain passes it.
	Chunks    []chunkRef `json:"chunks,omitempty"`
	NextChunk int        `json:"nextChunk"`
	Header    bool       `json:"header,omitempty"`
}

type chunkRef struct {
	N   int   `json:"n"`
	Max int64 `json:"max"`
}

// kept are the records of one session in one batch, for the journal.
type kept struct {
	header plog.Logs // the header record, if the batch had one
	recs   []keptRecord
}

type keptRecord struct {
	res    pcommon.Resource
	lr     plog.LogRecord
	maxSeq int64
}

func sessionKey(id string) string { return "s/" + strconv.Quote(id) }
func headerKey(id string) string  { return sessionKey(id) + "/h" }
func chunkKey(id string, n int) string {
	return sessionKey(id) + "/c/" + strconv.Itoa(n)
}
func bucketKey(b int) string { return fmt.Sprintf("idx/%02d", b) }

func bucketOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % journalBuckets)
}

// journalStore is where the journal's keys live: a storage extension's
// client, or the changelog (changelogStore).
type journalStore interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Batch(ctx context.Context, ops ...*storage.Operation) error
	Close(ctx context.Context) error
}

func newJournal(store journalStore) *journal {
	j := &journal{store: store, sessions: map[string]*journalEntry{}, behind: map[string]struct{}{}, resumed: map[string]int64{},
		source: map[string]string{}}
	for b := range j.buckets {
		j.buckets[b] = map[string]struct{}{}
	}
	return j
}

// openJournal opens the connector's client on the storage extension id.
func openJournal(ctx context.Context, host component.Host, id, self component.ID) (*journal, error) {
	client, err := storageclient.Open(ctx, host, id, component.KindConnector, self, "turns", "turn_state")
	if err != nil {
		return nil, err
	}
	j := newJournal(client)
	j.indexed = true
	return j, nil
}

// restored is one session read back from the journal.
type restored struct {
	id    string
	entry *journalEntry
	logs  plog.Logs // the header record first, then the chunks in order
}

// damagedKey is a journal value that cannot be read: its session (empty
// for a bucket list) starts afresh.
type damagedKey struct {
	key, session string
	err          error
}

// load reads every journaled session: with a storage extension all of
// them, with a changelog those an earlier start of this owner wrote last
// (the others are resumed by whichever instance their batches reach). A
// value that cannot be decoded does not stop the start: it is returned in
// damaged, and its session is not restored.
func (j *journal) load(ctx context.Context) (rs []restored, damaged []damagedKey, err error) {
	var ids []string
	if j.log != nil {
		j.log.Groups(func(g, writer string) {
			if id, ok := sessionOfKey(g); ok && changelog.OwnerOf(writer) == j.owner {
				ids = append(ids, id)
			}
		})
		slices.Sort(ids)
	} else {
		for b := range journalBuckets {
			raw, err := j.store.Get(ctx, bucketKey(b))
			if err != nil {
				return nil, nil, fmt.Errorf("read %s: %w", bucketKey(b), err)
			}
			if raw == nil {
				continue
			}
			var bucket []string
			if err := json.Unmarshal(raw, &bucket); err != nil {
				damaged = append(damaged, damagedKey{key: bucketKey(b), err: err})
				continue
			}
			ids = append(ids, bucket...)
		}
	}
	for _, id := range ids {
		r, ok, err := j.readSession(ctx, id)
		var d *damagedKey
		switch {
		case errors.As(err, &d):
			damaged = append(damaged, *d)
		case err != nil:
			return nil, nil, err
		case ok:
			j.adopt(r)
			rs = append(rs, r)
		}
	}
	return rs, damaged, nil
}

func (d *damagedKey) Error() string {
	return fmt.Sprintf("journal value %s unreadable: %v", d.key, d.err)
}

// readSession reads one session's entry, header and chunks; false when it
// has no entry (it never landed, or was deleted).
func (j *journal) readSession(ctx context.Context, id string) (restored, bool, error) {
	raw, err := j.store.Get(ctx, sessionKey(id))
	if err != nil {
		return restored{}, false, fmt.Errorf("read %s: %w", sessionKey(id), err)
	}
	if raw == nil {
		return restored{}, false, nil
	}
	e := &journalEntry{}
	if err := json.Unmarshal(raw, e); err != nil {
		return restored{}, false, &damagedKey{key: sessionKey(id), session: id, err: err}
	}
	r := restored{id: id, entry: e, logs: plog.NewLogs()}
	keys := []string{}
	if e.Header {
		keys = append(keys, headerKey(id))
	}
	for _, c := range e.Chunks {
		keys = append(keys, chunkKey(id, c.N))
	}
	var um plog.ProtoUnmarshaler
	for _, k := range keys {
		raw, err := j.store.Get(ctx, k)
		if err != nil {
			return restored{}, false, fmt.Errorf("read %s: %w", k, err)
		}
		if raw == nil {
			continue // a write that failed: its records were re-sent and are in a later chunk
		}
		ld, err := um.UnmarshalLogs(raw)
		if err != nil {
			return restored{}, false, &damagedKey{key: k, session: id, err: err}
		}
		ld.ResourceLogs().MoveAndAppendTo(r.logs.ResourceLogs())
	}
	return r, true, nil
}

// adopt makes a session read back the journal's own. With a changelog its
// entry is rewritten by the next write (behind), so that the changelog
// names this instance as the session's writer from then on.
func (j *journal) adopt(r restored) {
	j.sessions[r.id] = r.entry
	j.buckets[bucketOf(r.id)][r.id] = struct{}{}
	if j.log != nil {
		j.behind[r.id] = struct{}{}
	}
}

// release forgets a session another instance took over, writing nothing:
// its journal is that instance's now.
func (j *journal) release(id string) {
	delete(j.sessions, id)
	delete(j.buckets[bucketOf(id)], id)
	delete(j.behind, id)
	delete(j.resumed, id)
	delete(j.source, id)
}

// update brings the journal up to date with the engine for the given
// sessions (those a batch touched, those whose turns closed) and forgets
// the forgotten, returning the storage operations. batch holds the
// records each session had in the batch.
func (j *journal) update(e *turnengine.Engine, ids []string, batch map[string]*kept, forgotten []string) []*storage.Operation {
	u := &journalUpdate{j: j, dirty: map[int]bool{}}
	// Sessions a failed write left behind are rewritten whole (their
	// entry; the bucket lists are rewritten too), whether or not this pass
	// touched them.
	u.stale = j.behind
	if len(u.stale) > 0 {
		j.behind = map[string]struct{}{}
		for id := range u.stale {
			ids = append(ids, id)
			u.dirty[bucketOf(id)] = true
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
	}
	j.touched = append(append(j.touched[:0], ids...), forgotten...)
	for _, id := range forgotten {
		u.forget(id)
	}
	for _, id := range ids {
		m, ok := e.Mark(id)
		if !ok {
			continue // forgotten in this very batch, and never journaled
		}
		u.session(id, m, batch[id])
	}
	u.buckets()
	return u.ops
}

// journalUpdate is one pass of update: the operations it writes and the
// bucket lists it changes.
type journalUpdate struct {
	j     *journal
	ops   []*storage.Operation
	dirty map[int]bool
	stale map[string]struct{}
}

// forget deletes a forgotten session's entry, header and chunks.
func (u *journalUpdate) forget(id string) {
	ent := u.j.sessions[id]
	if ent == nil {
		return
	}
	u.ops = append(u.ops, storage.DeleteOperation(sessionKey(id)))
	if ent.Header {
		u.ops = append(u.ops, storage.DeleteOperation(headerKey(id)))
	}
	for _, c := range ent.Chunks {
		u.ops = append(u.ops, storage.DeleteOperation(chunkKey(id, c.N)))
	}
	delete(u.j.sessions, id)
	delete(u.j.source, id)
	b := bucketOf(id)
	delete(u.j.buckets[b], id)
	u.dirty[b] = true
}

// session brings one session's entry to its mark m: chunks wholly before
// m.Retain go, the batch's header and records from m.Retain on (k) are
// written, and the entry is rewritten when any of it changed.
func (u *journalUpdate) session(id string, m turnengine.Mark, k *kept) {
	ent := u.j.sessions[id]
	if ent == nil {
		ent = &journalEntry{}
		u.j.sessions[id] = ent
		b := bucketOf(id)
		u.j.buckets[b][id] = struct{}{}
		u.dirty[b] = true
	}
	_, wasBehind := u.stale[id]
	changed := !ent.Mark.Equal(m) || wasBehind
	ent.Mark = m
	live := ent.Chunks[:0]
	for _, c := range ent.Chunks {
		if c.Max < m.Retain {
			u.ops = append(u.ops, storage.DeleteOperation(chunkKey(id, c.N)))
			changed = true
			continue
		}
		live = append(live, c)
	}
	ent.Chunks = live
	if k != nil && u.keep(id, ent, m, k) {
		changed = true
	}
	if changed {
		b, _ := json.Marshal(ent)
		u.ops = append(u.ops, storage.SetOperation(sessionKey(id), b))
	}
}

// keep writes what the batch brought of a session that must be kept: its
// header record, and its records from m.Retain on as a new chunk. It
// reports whether it wrote anything.
func (u *journalUpdate) keep(id string, ent *journalEntry, m turnengine.Mark, k *kept) bool {
	wrote := false
	if k.header.ResourceLogs().Len() > 0 {
		if b, err := marshalLogs(k.header); err == nil {
			u.ops = append(u.ops, storage.SetOperation(headerKey(id), b))
			ent.Header, wrote = true, true
		}
	}
	ld, maxSeq := k.from(m.Retain)
	if ld.LogRecordCount() > 0 {
		if b, err := marshalLogs(ld); err == nil {
			n := ent.NextChunk
			ent.NextChunk++
			u.ops = append(u.ops, storage.SetOperation(chunkKey(id, n), b))
			ent.Chunks = append(ent.Chunks, chunkRef{N: n, Max: maxSeq})
			wrote = true
		}
	}
	return wrote
}

// buckets rewrites the id lists of the buckets the pass changed.
func (u *journalUpdate) buckets() {
	if !u.j.indexed {
		return
	}
	for b := range journalBuckets {
		if !u.dirty[b] {
			continue
		}
		ids := make([]string, 0, len(u.j.buckets[b]))
		for id := range u.j.buckets[b] {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		raw, _ := json.Marshal(ids)
		u.ops = append(u.ops, storage.SetOperation(bucketKey(b), raw))
	}
}

// from copies the records whose events reach seq retain or later into a
// new Logs, returning it and the highest seq in it.
func (k *kept) from(retain int64) (plog.Logs, int64) {
	ld := plog.NewLogs()
	maxSeq := int64(-1)
	var lrs plog.LogRecordSlice
	var last pcommon.Resource
	haveLast := false
	for _, r := range k.recs {
		if r.maxSeq < retain {
			continue
		}
		if !haveLast || r.res != last {
			rl := ld.ResourceLogs().AppendEmpty()
			r.res.CopyTo(rl.Resource())
			lrs = rl.ScopeLogs().AppendEmpty().LogRecords()
			last, haveLast = r.res, true
		}
		r.lr.CopyTo(lrs.AppendEmpty())
		maxSeq = max(maxSeq, r.maxSeq)
	}
	return ld, maxSeq
}

func marshalLogs(ld plog.Logs) ([]byte, error) {
	var m plog.ProtoMarshaler
	return m.MarshalLogs(ld)
}

func (j *journal) close(ctx context.Context) error {
	return j.store.Close(ctx)
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
// engine after a pass, given the records it kept and the turns it drained:
// the sessions of both are rewritten, the forgotten deleted. Callers hold
// mu; nil without a journal.
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

// errJournalWrite: a pass's journal write failed; the batch is refused.
var errJournalWrite = errors.New("turn_state: write the journal")

// startedStore is a journal store whose writes can be started under
// drainMu and waited for after it (the changelog's).
type startedStore interface {
	Start(ctx context.Context, ops ...*storage.Operation) func() error
}

// journalWrite is one pass's journal write: started in pass order under
// drainMu, waited for after it, so that the writes of passes that follow
// one another closely share a round trip to the changelog's brokers.
type journalWrite struct {
	touched []string     // the sessions it brings up to date
	wait    func() error // nil: nothing to wait for
	started bool         // a changelog write, counted in writing
	records int64        // what a changelog write carries
	bytes   int64
}

// startJournal starts the journal operations of one pass, in one storage
// batch. With a storage extension the write is done when it returns.
// Callers hold drainMu, not mu.
func (c *core) startJournal(ctx context.Context, ops []*storage.Operation) journalWrite {
	j := c.journal
	if j == nil {
		return journalWrite{}
	}
	w := journalWrite{touched: j.touched}
	j.touched = nil
	if len(ops) == 0 {
		return w
	}
	if s, ok := j.store.(startedStore); ok {
		w.wait, w.started = s.Start(ctx, ops...), true
		c.writing.Add(1)
		if n := c.inFlight.Add(1); n > c.peakInFlight.Load() {
			c.peakInFlight.Store(n) // under drainMu: no other Add races it
		}
		w.records = int64(len(ops))
		for _, op := range ops {
			w.bytes += int64(len(op.Key) + len(op.Value) + len(changelog.WriterHeader) + len(j.log.Writer()))
			if id, ok := sessionOfKey(op.Key); ok && j.source[id] != "" {
				w.bytes += int64(len(changelog.SourceHeader) + len(j.source[id]))
			}
		}
		return w
	}
	err := j.store.Batch(ctx, ops...)
	w.wait = func() error { return err }
	return w
}

// finishJournal waits for a pass's journal write. A failed write leaves
// the sessions it was for behind: the next pass rewrites them whole
// (journal_lag counts them meanwhile). Callers hold no lock.
func (c *core) finishJournal(ctx context.Context, w journalWrite) error {
	if w.wait == nil {
		return nil
	}
	err := w.wait()
	if w.started {
		c.inFlight.Add(-1)
		c.writing.Done()
		if err == nil {
			c.tel.ChangelogRecords.Add(ctx, w.records)
			c.tel.ChangelogBytes.Add(ctx, w.bytes)
		}
	}
	c.mu.Lock()
	if err != nil {
		for _, id := range w.touched {
			c.journal.behind[id] = struct{}{}
		}
	}
	c.lag.Store(int64(len(c.journal.behind)))
	c.mu.Unlock()
	if err != nil {
		c.tel.JournalFailures.Add(ctx, 1)
		c.journaling.Strike(err)
		return fmt.Errorf("%w: %w", errJournalWrite, err)
	}
	c.journaling.Clear()
	return nil
}

// redelivered counts, among a batch's inputs, the events of sessions
// restored at start whose seq the journal had applied already: what the
// receivers deliver again after a restart, from their own restart
// positions, which are never ahead of the journal. Callers hold mu.
func (j *journal) redelivered(inputs []turnengine.Input) int64 {
	if j == nil || len(j.resumed) == 0 {
		return 0
	}
	var n int64
	for _, in := range inputs {
		next, ok := j.resumed[in.SessionID]
		if !ok {
			continue
		}
		if in.Event.Seq < next {
			n++
			continue
		}
		delete(j.resumed, in.SessionID)
	}
	return n
}

// restore loads every journaled session of j and, in one pass, makes j the
// core's journal and resumes each session: its mark first, then its
// records from the mark's Retain on, re-applied without being counted
// again. The pass holds the turns the records close for the first pass
// after it (the next consumers may not run yet); its journal write
// forgets the sessions beyond max_sessions.
func (c *core) restore(ctx context.Context, j *journal) error {
	rs, damaged, err := j.load(ctx)
	if err != nil {
		return err
	}
	c.reportDamaged(ctx, j, damaged)
	var open int
	var events int64
	err = c.settle(ctx, pass{hold: true, change: func(now time.Time) map[string]*kept {
		c.journal = j
		for _, r := range rs {
			events += c.resume(ctx, r, now)
		}
		open = c.engine.OpenTurns()
		return nil
	}})
	if err != nil {
		return err
	}
	c.tel.JournalRestored.Add(ctx, events)
	c.logger.Info("Sessions restored from the journal", zap.Int("sessions", len(rs)), zap.Int("open_turns", open), zap.Int64("events", events))
	return nil
}

// reportDamaged says, one line each, which journal values could not be
// read and what that costs: a damaged session starts afresh (the turn it
// had open loses its spans; its later events count as orphans), a damaged
// bucket list loses the sessions it listed. The damaged values are
// deleted, so the next start does not meet them again.
func (c *core) reportDamaged(ctx context.Context, j *journal, damaged []damagedKey) {
	var ops []*storage.Operation
	for _, d := range damaged {
		if d.session == "" {
			c.logger.Error("Journal bucket list unreadable: the sessions it listed start afresh, their open turns lost",
				zap.String("key", d.key), zap.Error(d.err))
		} else {
			c.logger.Error("Session journal unreadable: the session starts afresh, its open turn lost",
				zap.String("session", d.session), zap.String("key", d.key), zap.Error(d.err))
		}
		ops = append(ops, storage.DeleteOperation(d.key))
	}
	c.tel.JournalDamaged.Add(ctx, int64(len(damaged)))
	if len(ops) > 0 && j.log == nil {
		if err := j.store.Batch(ctx, ops...); err != nil {
			c.logger.Warn("Could not delete the unreadable journal values", zap.Error(err))
		}
	}
}
