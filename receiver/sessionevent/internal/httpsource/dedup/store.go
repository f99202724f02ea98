package dedup

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/sessiontable"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// keyPrefix prefixes a session's key in the storage client.
const keyPrefix = "session/"

// stored is the stored form of a Session, with the record tracker's
// position in it.
type stored struct {
	Current  int                `json:"current"`
	Gens     map[string]*seqSet `json:"gens"`
	Position logrecord.Position `json:"position"`
}

// Store holds the sessions' states, at most a bound of them, least
// recently used first out. Its mutex guards the table only; a request
// serializes its work on a session through the session's stripe lock
// (LockSessions).
type Store struct {
	mu       sync.Mutex
	sessions *sessiontable.Table[*Session]
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

// NewStore returns an empty store of at most maxSessions sessions
// (turnmodel.DefaultMaxSessions when not positive), in memory only until
// Load attaches a storage client.
func NewStore(maxSessions int, logger *zap.Logger) *Store {
	if maxSessions <= 0 {
		maxSessions = turnmodel.DefaultMaxSessions
	}
	return &Store{
		sessions: sessiontable.New[*Session](maxSessions),
		client:   storage.NewNopClient(), complete: true, logger: logger,
	}
}

// Load attaches the storage client and reads every stored session when
// the client can walk (those beyond the bound are deleted); their record
// tracker positions go to restore.
func (d *Store) Load(ctx context.Context, client storage.Client, restore func(id string, p logrecord.Position)) error {
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
		id, ok := strings.CutPrefix(key, keyPrefix)
		if !ok {
			return nil, nil
		}
		st, pos, err := decodeSession(id, value)
		if err != nil {
			d.logger.Warn("Dropping unreadable dedup state", zap.String("session.id", id), zap.Error(err))
			return []*storage.Operation{storage.DeleteOperation(key)}, nil
		}
		if d.sessions.Full() {
			drop = append(drop, storage.DeleteOperation(key))
			return nil, nil
		}
		d.sessions.Add(id, st)
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

func decodeSession(id string, value []byte) (*Session, logrecord.Position, error) {
	var s stored
	if err := json.Unmarshal(value, &s); err != nil {
		return nil, logrecord.Position{}, err
	}
	st := newSession(id, s.Current)
	for k, g := range s.Gens {
		v, err := strconv.Atoi(k)
		if err != nil || g == nil {
			return nil, logrecord.Position{}, errors.New("bad format version key " + strconv.Quote(k))
		}
		st.gens[v] = g
	}
	return st, s.Position, nil
}

// Session returns the state of a session, loading or creating it. It also
// returns the tracker position stored with a session loaded now (zero
// otherwise) and the sessions evicted to make room, whose tracker
// positions the caller drops.
func (d *Store) Session(ctx context.Context, id string) (st *Session, loaded logrecord.Position, evicted []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.sessions.Get(id); ok {
		return st, logrecord.Position{}, nil
	}
	if !d.complete {
		if b, err := d.client.Get(ctx, keyPrefix+id); err == nil && b != nil {
			if s, pos, err := decodeSession(id, b); err == nil {
				st, loaded = s, pos
			}
		}
	}
	if st == nil {
		st = newSession(id, UnknownVersion)
	}
	for d.sessions.Full() {
		old, _, _ := d.sessions.Oldest()
		d.sessions.Remove(old)
		d.evicted = append(d.evicted, old)
		evicted = append(evicted, old)
	}
	d.sessions.Add(st.id, st)
	return st, loaded, evicted
}

// CurrentVersion is the header version remembered for a session
// (UnknownVersion: none).
func (d *Store) CurrentVersion(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if st, ok := d.sessions.Peek(id); ok {
		return st.Version()
	}
	return UnknownVersion
}

// Len is the number of sessions remembered.
func (d *Store) Len() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(d.sessions.Len())
}

// Persist writes the given sessions, each with the tracker position
// position gives, and deletes the evicted ones, in one batch. The caller
// holds the sessions' stripe locks.
func (d *Store) Persist(ctx context.Context, states []*Session, position func(string) logrecord.Position) error {
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
		ops = append(ops, storage.DeleteOperation(keyPrefix+id))
	}
	for _, st := range states {
		s := stored{Current: st.Version(), Gens: map[string]*seqSet{}, Position: position(st.id)}
		for v, g := range st.gens {
			s.Gens[strconv.Itoa(v)] = g
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(keyPrefix+st.id, b))
	}
	if len(ops) == 0 {
		return nil
	}
	return client.Batch(ctx, ops...)
}

// LockSessions takes the stripe locks of the given sessions in a fixed
// order (no deadlock between requests naming several sessions) and returns
// the function releasing them.
func (d *Store) LockSessions(ids []string) (unlock func()) {
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
