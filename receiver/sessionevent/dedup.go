package sessionevent

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
)

// The HTTP source is idempotent by (session id, format version, seq)
// (docs/format.md §10.3): a row already accepted is acknowledged as a duplicate
// and never emitted again. What it remembers is bounded: per session and
// format version a high-water mark (every seq up to it was accepted) plus at
// most maxRanges ranges of seqs accepted above it, and at most maxSessions
// sessions, least recently used first out. With a storage extension the
// state is written through after every delivered request, so a restart does
// not emit re-posted rows again.

const (
	// defaultDedupSessions bounds the sessions remembered (the connector's
	// max_sessions default).
	defaultDedupSessions = 100000
	// maxRanges bounds the accepted ranges kept above a high-water mark.
	// Beyond it the oldest gap is given up: the mark moves over it, and rows
	// of that gap arriving later are acknowledged as duplicates — as the
	// connector gives up on a gap after its gap timeout.
	maxRanges = 256
	// unknownVersion keys rows whose session never showed a header: live
	// streams (SDK notifications, stream-json lines) carry none.
	unknownVersion = -1
	// dedupKeyPrefix prefixes a session's key in the storage client.
	dedupKeyPrefix = "session/"
)

// seqSet is the set of seqs accepted for one session and format version.
type seqSet struct {
	// HWM: every seq ≤ HWM was accepted (-1: none).
	HWM int64 `json:"hwm"`
	// Ranges are accepted seqs above HWM+1: sorted, disjoint, not adjacent.
	Ranges [][2]int64 `json:"ranges,omitempty"`
	// Header: the header row of this format version was accepted.
	Header bool `json:"header,omitempty"`
}

func newSeqSet() *seqSet { return &seqSet{HWM: -1} }

// contains reports whether every seq of [a, b] was accepted.
func (s *seqSet) contains(a, b int64) bool {
	if b <= s.HWM {
		return true
	}
	for _, r := range s.Ranges {
		if r[0] <= max(a, s.HWM+1) && b <= r[1] {
			return true
		}
		if r[0] > b {
			break
		}
	}
	return false
}

// add marks [a, b] accepted and returns how many never-seen seqs were given
// up to keep the set bounded.
func (s *seqSet) add(a, b int64) (abandoned int64) {
	if b <= s.HWM {
		return 0
	}
	a = max(a, s.HWM+1)
	// Insert, merging overlapping and adjacent ranges.
	out := s.Ranges[:0:0]
	placed := false
	for _, r := range s.Ranges {
		switch {
		case r[1]+1 < a:
			out = append(out, r)
		case b+1 < r[0]:
			if !placed {
				out = append(out, [2]int64{a, b})
				placed = true
			}
			out = append(out, r)
		default:
			a, b = min(a, r[0]), max(b, r[1])
		}
	}
	if !placed {
		out = append(out, [2]int64{a, b})
	}
	s.Ranges = out
	// A range starting right after the mark extends it.
	for len(s.Ranges) > 0 && s.Ranges[0][0] == s.HWM+1 {
		s.HWM = s.Ranges[0][1]
		s.Ranges = s.Ranges[1:]
	}
	for len(s.Ranges) > maxRanges {
		abandoned += s.Ranges[0][0] - s.HWM - 1
		s.HWM = s.Ranges[0][1]
		s.Ranges = s.Ranges[1:]
	}
	if len(s.Ranges) == 0 {
		s.Ranges = nil
	}
	return abandoned
}

// merge adds every seq of o.
func (s *seqSet) merge(o *seqSet) (abandoned int64) {
	if o.HWM >= 0 {
		abandoned += s.add(0, o.HWM)
	}
	for _, r := range o.Ranges {
		abandoned += s.add(r[0], r[1])
	}
	s.Header = s.Header || o.Header
	return abandoned
}

// sessionState is what the HTTP source remembers of one session.
type sessionState struct {
	id string
	// current is the highest header version seen; rows posted without a
	// header are keyed by it (unknownVersion when none was seen). Atomic:
	// request parsing reads it without the session's stripe lock.
	current atomic.Int64
	// gens are the accepted seqs per format version, touched only under
	// the session's stripe lock.
	gens map[int]*seqSet
	elem *list.Element
}

func newSessionState(id string, current int) *sessionState {
	st := &sessionState{id: id, gens: map[int]*seqSet{}}
	st.current.Store(int64(current))
	return st
}

func (s *sessionState) version() int { return int(s.current.Load()) }

func (s *sessionState) gen(version int) *seqSet {
	g := s.gens[version]
	if g == nil {
		g = newSeqSet()
		s.gens[version] = g
	}
	return g
}

// storedSession is the stored form of a sessionState.
type storedSession struct {
	Current  int                `json:"current"`
	Gens     map[string]*seqSet `json:"gens"`
	Position logrecord.Position `json:"position"`
}

// dedupStore holds the session states and their LRU order. Its mutex
// guards the map and order only; a request serializes its work on a
// session through the session's stripe lock (lockSessions).
type dedupStore struct {
	mu       sync.Mutex
	max      int
	sessions map[string]*sessionState
	lru      *list.List // front: most recently used
	// evicted are sessions dropped from memory whose stored state is still
	// to be deleted (with the next write).
	evicted []string
	client  storage.Client
	// persistent: client is a real storage extension's, not the nop one.
	persistent bool
	// complete: every stored session was loaded at start (the client can
	// walk), so a miss needs no lookup.
	complete bool
	logger   *zap.Logger

	stripes [256]sync.Mutex
}

func newDedupStore(maxSessions int, logger *zap.Logger) *dedupStore {
	if maxSessions <= 0 {
		maxSessions = defaultDedupSessions
	}
	return &dedupStore{
		max: maxSessions, sessions: map[string]*sessionState{}, lru: list.New(),
		client: storage.NewNopClient(), complete: true, logger: logger,
	}
}

// load attaches the storage client and reads every stored session when
// the client can walk; positions go back into the tracker.
func (d *dedupStore) load(ctx context.Context, client storage.Client, restore func(id string, p logrecord.Position)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.client = client
	d.persistent = true
	w, ok := client.(storage.Walker)
	if !ok {
		d.complete = false
		return nil
	}
	var drop []*storage.Operation
	err := w.Walk(ctx, func(key string, value []byte) ([]*storage.Operation, error) {
		id, ok := strings.CutPrefix(key, dedupKeyPrefix)
		if !ok {
			return nil, nil
		}
		st, pos, err := decodeSession(id, value)
		if err != nil {
			d.logger.Warn("Dropping unreadable dedup state", zap.String("session.id", id), zap.Error(err))
			return []*storage.Operation{storage.DeleteOperation(key)}, nil
		}
		if len(d.sessions) >= d.max {
			drop = append(drop, storage.DeleteOperation(key))
			return nil, nil
		}
		d.insert(st)
		restore(id, pos)
		return nil, nil
	})
	if err != nil {
		return err
	}
	if len(drop) > 0 {
		return client.Batch(ctx, drop...)
	}
	return nil
}

func decodeSession(id string, value []byte) (*sessionState, logrecord.Position, error) {
	var s storedSession
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, logrecord.Position{}, err
	}
	st := newSessionState(id, s.Current)
	for k, g := range s.Gens {
		v, err := strconv.Atoi(k)
		if err != nil || g == nil {
			return nil, logrecord.Position{}, errors.New("bad format version key " + strconv.Quote(k))
		}
		st.gens[v] = g
	}
	return st, s.Position, nil
}

func (d *dedupStore) insert(st *sessionState) {
	st.elem = d.lru.PushFront(st)
	d.sessions[st.id] = st
}

// session returns the state of a session, loading or creating it. It also
// returns the tracker position stored with a session loaded now (zero
// otherwise) and the sessions evicted to make room, whose tracker positions
// the caller drops.
func (d *dedupStore) session(ctx context.Context, id string) (st *sessionState, loaded logrecord.Position, evicted []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st := d.sessions[id]; st != nil {
		d.lru.MoveToFront(st.elem)
		return st, logrecord.Position{}, nil
	}
	if !d.complete {
		if b, err := d.client.Get(ctx, dedupKeyPrefix+id); err == nil && b != nil {
			if s, pos, err := decodeSession(id, b); err == nil {
				st, loaded = s, pos
			}
		}
	}
	if st == nil {
		st = newSessionState(id, unknownVersion)
	}
	for len(d.sessions) >= d.max {
		old := d.lru.Back().Value.(*sessionState)
		d.lru.Remove(old.elem)
		delete(d.sessions, old.id)
		d.evicted = append(d.evicted, old.id)
		evicted = append(evicted, old.id)
	}
	d.insert(st)
	return st, loaded, evicted
}

// currentVersion is the header version remembered for a session.
func (d *dedupStore) currentVersion(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st := d.sessions[id]; st != nil {
		return st.version()
	}
	return unknownVersion
}

// len is the number of sessions remembered.
func (d *dedupStore) len() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(len(d.sessions))
}

// persist writes the given sessions (and deletes the evicted ones) in one
// batch. The caller holds the sessions' stripe locks.
func (d *dedupStore) persist(ctx context.Context, states []*sessionState, position func(string) logrecord.Position) error {
	d.mu.Lock()
	evicted := d.evicted
	d.evicted = nil
	client, persistent := d.client, d.persistent
	d.mu.Unlock()
	if !persistent {
		return nil
	}
	ops := make([]*storage.Operation, 0, len(states)+len(evicted))
	for _, id := range evicted {
		ops = append(ops, storage.DeleteOperation(dedupKeyPrefix+id))
	}
	for _, st := range states {
		s := storedSession{Current: st.version(), Gens: map[string]*seqSet{}, Position: position(st.id)}
		for v, g := range st.gens {
			s.Gens[strconv.Itoa(v)] = g
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(dedupKeyPrefix+st.id, b))
	}
	if len(ops) == 0 {
		return nil
	}
	return client.Batch(ctx, ops...)
}

// lockSessions takes the stripe locks of the given sessions in a fixed
// order (no deadlock between requests naming several sessions) and returns
// the function releasing them.
func (d *dedupStore) lockSessions(ids []string) func() {
	var idx []int
	seen := map[int]bool{}
	for _, id := range ids {
		i := stripe(id, len(d.stripes))
		if !seen[i] {
			seen[i] = true
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	for _, i := range idx {
		d.stripes[i].Lock()
	}
	return func() {
		for k := len(idx) - 1; k >= 0; k-- {
			d.stripes[idx[k]].Unlock()
		}
	}
}

func stripe(id string, n int) int {
	// FNV-1a.
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}
