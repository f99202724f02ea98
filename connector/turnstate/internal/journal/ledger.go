package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/episode"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// entry is one session's state in the journal.
type entry struct {
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

// store is where the journal's keys live: a storage extension's client,
// or the changelog.
type store interface {
	Get(ctx context.Context, key string) ([]byte, error)
	// Start starts writing ops and returns what waits for the write;
	// async: it may still be under way when Start returns.
	Start(ctx context.Context, ops []*storage.Operation) (wait func() error, async bool)
	Close(ctx context.Context) error
}

// Options are what a journal reports to.
type Options struct {
	// Logger and Telemetry are the connector's.
	Logger    *zap.Logger
	Telemetry *metadata.Telemetry
	// Lag mirrors the number of sessions behind, for the journal_lag gauge.
	Lag *atomic.Int64
}

// ledger is the journal protocol both stores share: the sessions' entries
// and the writes that keep them up to date.
type ledger struct {
	store   store
	indexed bool // the store cannot list its keys: keep the idx buckets
	Options
	failing *episode.Episode // writes failing, said as it begins and ends

	// writing counts the writes started and not yet finished; inFlight and
	// peakInFlight count them now and at most.
	writing                sync.WaitGroup
	inFlight, peakInFlight atomic.Int64

	mu       sync.Mutex // a leaf: guards the fields below, never held while calling out
	sessions map[string]*entry
	buckets  [buckets]map[string]struct{}
	// touched are the sessions the pending write brings up to date;
	// behind those whose last write failed, rewritten whole by the next
	// update.
	touched []string
	behind  map[string]struct{}
	// resumed is, per session resumed from the journal, the first seq it
	// had not applied (its Mark's Next): events below it delivered again
	// are redeliveries. A session leaves it with its first event at or
	// past that seq.
	resumed map[string]int64
}

func newLedger(s store, indexed bool, o Options) *ledger {
	if o.Lag == nil {
		o.Lag = new(atomic.Int64)
	}
	l := &ledger{store: s, indexed: indexed, Options: o,
		sessions: map[string]*entry{}, behind: map[string]struct{}{}, resumed: map[string]int64{}}
	for b := range l.buckets {
		l.buckets[b] = map[string]struct{}{}
	}
	l.failing = episode.New(o.Logger,
		"Cannot write the journal: batches are refused (their senders retry) until a write lands; the sessions concerned are rewritten whole then",
		"The journal is written again")
	return l
}

// damaged is a journal value that cannot be read: its session (empty for a
// bucket list) starts afresh.
type damaged struct {
	key, session string
	err          error
}

func (d *damaged) Error() string {
	return fmt.Sprintf("journal value %s unreadable: %v", d.key, d.err)
}

// readSession reads one session's entry, header and chunks; false when it
// has no entry (it never landed, or was deleted).
func (l *ledger) readSession(ctx context.Context, id string) (Restored, *entry, bool, error) {
	raw, err := l.store.Get(ctx, SessionKey(id))
	if err != nil {
		return Restored{}, nil, false, fmt.Errorf("read %s: %w", SessionKey(id), err)
	}
	if raw == nil {
		return Restored{}, nil, false, nil
	}
	e := &entry{}
	if err := json.Unmarshal(raw, e); err != nil {
		return Restored{}, nil, false, &damaged{key: SessionKey(id), session: id, err: err}
	}
	r := Restored{ID: id, Mark: e.Mark, Logs: plog.NewLogs()}
	keys := []string{}
	if e.Header {
		keys = append(keys, headerKey(id))
	}
	for _, c := range e.Chunks {
		keys = append(keys, chunkKey(id, c.N))
	}
	var um plog.ProtoUnmarshaler
	for _, k := range keys {
		raw, err := l.store.Get(ctx, k)
		if err != nil {
			return Restored{}, nil, false, fmt.Errorf("read %s: %w", k, err)
		}
		if raw == nil {
			continue // a write that failed: its records were re-sent and are in a later chunk
		}
		ld, err := um.UnmarshalLogs(raw)
		if err != nil {
			return Restored{}, nil, false, &damaged{key: k, session: id, err: err}
		}
		ld.ResourceLogs().MoveAndAppendTo(r.Logs.ResourceLogs())
	}
	return r, e, true, nil
}

// adopt makes a session read back the journal's own, and notes where its
// redeliveries end. rewrite: its entry is rewritten by the next write
// (behind), so that a changelog names this instance as its writer.
func (l *ledger) adopt(r Restored, e *entry, rewrite bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sessions[r.ID] = e
	l.buckets[bucketOf(r.ID)][r.ID] = struct{}{}
	if rewrite {
		l.behind[r.ID] = struct{}{}
	}
	if r.Mark.Started {
		l.resumed[r.ID] = r.Mark.Next
	}
}

// release forgets a session another instance took over, writing nothing:
// its journal is that instance's now. It reports whether it was journaled.
func (l *ledger) release(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.sessions[id]
	delete(l.sessions, id)
	delete(l.buckets[bucketOf(id)], id)
	delete(l.behind, id)
	delete(l.resumed, id)
	return ok
}

// has reports whether a session is journaled here.
func (l *ledger) has(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.sessions[id]
	return ok
}

// Sessions lists the sessions journaled here, sorted.
func (l *ledger) Sessions() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, 0, len(l.sessions))
	for id := range l.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Chunks lists the chunk numbers a session's entry keeps.
func (l *ledger) Chunks(id string) []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ns []int
	if e := l.sessions[id]; e != nil {
		for _, c := range e.Chunks {
			ns = append(ns, c.N)
		}
	}
	return ns
}

// Get reads a key of the store (tests read the chunks with it).
func (l *ledger) Get(ctx context.Context, key string) ([]byte, error) {
	return l.store.Get(ctx, key)
}

// ChunkKey is the key of a session's chunk n.
func ChunkKey(id string, n int) string { return chunkKey(id, n) }

// Update implements Journal.
func (l *ledger) Update(mark MarkOf, ids []string, batch map[string]*Kept, forgotten []string) []*storage.Operation {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := &update{l: l, dirty: map[int]bool{}}
	// Sessions a failed write left behind are rewritten whole (their
	// entry; the bucket lists are rewritten too), whether or not this pass
	// touched them.
	u.stale = l.behind
	if len(u.stale) > 0 {
		l.behind = map[string]struct{}{}
		for id := range u.stale {
			ids = append(ids, id)
			u.dirty[bucketOf(id)] = true
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
	}
	l.touched = append(append(l.touched[:0], ids...), forgotten...)
	for _, id := range forgotten {
		u.forget(id)
	}
	for _, id := range ids {
		m, ok := mark(id)
		if !ok {
			continue // forgotten in this very batch, and never journaled
		}
		u.session(id, m, batch[id])
	}
	u.buckets()
	return u.ops
}

// update is one pass of Update: the operations it writes and the bucket
// lists it changes. Made under the ledger's lock.
type update struct {
	l     *ledger
	ops   []*storage.Operation
	dirty map[int]bool
	stale map[string]struct{}
}

// forget deletes a forgotten session's entry, header and chunks.
func (u *update) forget(id string) {
	ent := u.l.sessions[id]
	if ent == nil {
		return
	}
	u.ops = append(u.ops, storage.DeleteOperation(SessionKey(id)))
	if ent.Header {
		u.ops = append(u.ops, storage.DeleteOperation(headerKey(id)))
	}
	for _, c := range ent.Chunks {
		u.ops = append(u.ops, storage.DeleteOperation(chunkKey(id, c.N)))
	}
	delete(u.l.sessions, id)
	b := bucketOf(id)
	delete(u.l.buckets[b], id)
	u.dirty[b] = true
}

// session brings one session's entry to its mark m: chunks wholly before
// m.Retain go, the batch's header and records from m.Retain on (k) are
// written, and the entry is rewritten when any of it changed.
func (u *update) session(id string, m turnengine.Mark, k *Kept) {
	ent := u.l.sessions[id]
	if ent == nil {
		ent = &entry{}
		u.l.sessions[id] = ent
		b := bucketOf(id)
		u.l.buckets[b][id] = struct{}{}
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
		u.ops = append(u.ops, storage.SetOperation(SessionKey(id), b))
	}
}

// keep writes what the batch brought of a session that must be kept: its
// header record, and its records from m.Retain on as a new chunk. It
// reports whether it wrote anything.
func (u *update) keep(id string, ent *entry, m turnengine.Mark, k *Kept) bool {
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
func (u *update) buckets() {
	if !u.l.indexed {
		return
	}
	for b := range buckets {
		if !u.dirty[b] {
			continue
		}
		ids := make([]string, 0, len(u.l.buckets[b]))
		for id := range u.l.buckets[b] {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		raw, _ := json.Marshal(ids)
		u.ops = append(u.ops, storage.SetOperation(bucketKey(b), raw))
	}
}

// Start implements Journal. With a storage extension the write is done
// when it returns.
func (l *ledger) Start(ctx context.Context, ops []*storage.Operation) Write {
	l.mu.Lock()
	w := Write{touched: l.touched}
	l.touched = nil
	l.mu.Unlock()
	if len(ops) == 0 {
		return w
	}
	w.wait, w.async = l.store.Start(ctx, ops)
	if w.async {
		l.writing.Add(1)
		if n := l.inFlight.Add(1); n > l.peakInFlight.Load() {
			l.peakInFlight.Store(n) // under the pass lock: no other Add races it
		}
	}
	return w
}

// Finish implements Journal.
func (l *ledger) Finish(ctx context.Context, w Write) error {
	if w.wait == nil {
		return nil
	}
	err := w.wait()
	if w.async {
		l.inFlight.Add(-1)
		l.writing.Done()
	}
	l.mu.Lock()
	if err != nil {
		for _, id := range w.touched {
			l.behind[id] = struct{}{}
		}
	}
	l.Lag.Store(int64(len(l.behind)))
	l.mu.Unlock()
	if err != nil {
		l.Telemetry.JournalFailures.Add(ctx, 1)
		l.failing.Strike(err)
		return fmt.Errorf("%w: %w", ErrWrite, err)
	}
	l.failing.Clear()
	return nil
}

// KeepBack implements Journal.
func (l *ledger) KeepBack() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range l.touched {
		l.behind[id] = struct{}{}
	}
	l.touched = nil
	l.Lag.Store(int64(len(l.behind)))
}

// markBehind marks sessions behind: the next update rewrites them whole.
func (l *ledger) markBehind(ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		l.behind[id] = struct{}{}
	}
	l.Lag.Store(int64(len(l.behind)))
}

// Wait implements Journal.
func (l *ledger) Wait() { l.writing.Wait() }

// PeakInFlight is the most writes that were under way at once.
func (l *ledger) PeakInFlight() int64 { return l.peakInFlight.Load() }

// Redelivered implements Journal: what the receivers deliver again after a
// restart, from their own restart positions, which are never ahead of the
// journal.
func (l *ledger) Redelivered(inputs []turnengine.Input) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.resumed) == 0 {
		return 0
	}
	var n int64
	for _, in := range inputs {
		next, ok := l.resumed[in.SessionID]
		if !ok {
			continue
		}
		if in.Event.Seq < next {
			n++
			continue
		}
		delete(l.resumed, in.SessionID)
	}
	return n
}

// Close implements Journal.
func (l *ledger) Close(ctx context.Context) error {
	return l.store.Close(ctx)
}

// readAll reads the sessions ids, adopting each; the values that cannot be
// decoded are returned, their sessions not restored.
func (l *ledger) readAll(ctx context.Context, ids []string, rewrite bool) (rs []Restored, bad []damaged, err error) {
	for _, id := range ids {
		r, e, ok, err := l.readSession(ctx, id)
		var d *damaged
		switch {
		case asDamaged(err, &d):
			bad = append(bad, *d)
		case err != nil:
			return nil, nil, err
		case ok:
			l.adopt(r, e, rewrite)
			rs = append(rs, r)
		}
	}
	return rs, bad, nil
}

// report says, one line each, which journal values could not be read and
// what that costs: a damaged session starts afresh (the turn it had open
// loses its spans; its later events count as orphans), a damaged bucket
// list loses the sessions it listed.
func (l *ledger) report(ctx context.Context, bad []damaged) {
	for _, d := range bad {
		if d.session == "" {
			l.Logger.Error("Journal bucket list unreadable: the sessions it listed start afresh, their open turns lost",
				zap.String("key", d.key), zap.Error(d.err))
		} else {
			l.Logger.Error("Session journal unreadable: the session starts afresh, its open turn lost",
				zap.String("session", d.session), zap.String("key", d.key), zap.Error(d.err))
		}
	}
	l.Telemetry.JournalDamaged.Add(ctx, int64(len(bad)))
}
