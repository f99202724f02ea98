package placement

import (
	"time"

	"github.com/dshtrace/dshtrace/internal/sessiontable"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Table follows the sessions whose events are placed, within the bounds
// the turn engine has:
//   - at MaxSessions the least recently active session is forgotten, its
//     open turn closed first;
//   - at MaxOpenTurns the turn open longest is closed;
//   - a session silent for DanglingTimeout (arrival time) has its open turn
//     closed at its next arrival.
//
// The engine closes exactly these turns as dangling; their later events
// belong to no span it emits, so they are placed in none. A Table is not
// safe for concurrent use.
type Table struct {
	bounds turnmodel.Bounds
	// sessions are the sessions followed, in order of last arrival.
	sessions *sessiontable.Table[*Session]
	// open orders the sessions with an open turn of their own by when it
	// opened.
	open sessiontable.List[*Session]
	// last is the session returned last: the records of a batch come
	// session by session, so most lookups need no hashing.
	last *Session
}

// Session is what a Table keeps of one session: its cursor, its last
// arrival, the ids last computed for it.
type Session struct {
	cur  *turnmodel.Cursor
	elem *sessiontable.Elem[*Session]
	// arrival is the last arrival time given (zero: none yet).
	arrival time.Time
	// openElem is the session's entry in Table.open, kept to join it
	// again without an allocation; it is in the list while a turn of the
	// session's own (not an inherited one) is open: openTurn, 0 when none.
	openElem sessiontable.Elem[*Session]
	openTurn int64
	// lastSeq is the seq of the last event placed (valid when placed).
	lastSeq int64
	placed  bool
	ids     idCache
}

// New returns an empty Table with bounds b (a bound that is not positive
// takes its default).
func New(b turnmodel.Bounds) *Table {
	b = b.WithDefaults()
	return &Table{bounds: b, sessions: sessiontable.New[*Session](b.MaxSessions)}
}

// Bounds are the table's bounds, defaults applied.
func (t *Table) Bounds() turnmodel.Bounds { return t.bounds }

// Len is the number of sessions followed.
func (t *Table) Len() int { return t.sessions.Len() }

// Session returns session id's state as it arrives at time now, making it
// the most recently active. A session not followed yet is added, the least
// recently active one forgotten first at MaxSessions (evicted reports
// that). A session silent since its last arrival for DanglingTimeout has
// its open turn closed. A zero now is no arrival: a replay of rows already
// delivered, which neither measures nor resets the silence.
func (t *Table) Session(id string, now time.Time) (s *Session, evicted bool) {
	if s = t.last; s != nil && id == s.cur.Session() {
		t.sessions.Touch(s.elem)
	} else if s, _ = t.sessions.Get(id); s == nil {
		evicted = t.makeRoom()
		s = &Session{cur: turnmodel.NewCursor(id)}
		s.elem = t.sessions.Add(s.cur.Session(), s) // the cursor's copy, no view into a record
	}
	t.last = s
	if !now.IsZero() {
		if !s.arrival.IsZero() && now.Sub(s.arrival) >= t.bounds.DanglingTimeout {
			t.closeTurn(s)
		}
		s.arrival = now
	}
	return s, evicted
}

// makeRoom forgets the least recently active session when the table is
// full, closing its open turn; it reports whether one was forgotten.
func (t *Table) makeRoom() bool {
	if !t.sessions.Full() {
		return false
	}
	id, s, ok := t.sessions.Oldest()
	if !ok {
		return false
	}
	t.closeTurn(s)
	t.forget(id, s)
	return true
}

// Forget drops session id (a receiver undoing what it knew of it); it
// reports whether the session was followed. Its open turn is no longer
// counted against MaxOpenTurns.
func (t *Table) Forget(id string) bool {
	s, ok := t.sessions.Peek(id)
	if !ok {
		return false
	}
	t.leaveOpen(s)
	t.forget(id, s)
	return true
}

func (t *Table) forget(id string, s *Session) {
	t.sessions.Remove(id)
	if t.last == s {
		t.last = nil
	}
}

// Save returns a copy of session id's cursor, nil when the session is not
// followed. It does not touch the order of last arrival.
func (t *Table) Save(id string) *turnmodel.Cursor {
	s, ok := t.sessions.Peek(id)
	if !ok {
		return nil
	}
	return s.cur.Clone()
}

// Restore puts a saved cursor back as session id's (a copy of it; nil
// forgets the session), as a receiver does when a delivery was refused or
// after a restart. The ids computed before are dropped and the seq of the
// last event placed is unknown again; the session's open turn is counted
// as the cursor says.
func (t *Table) Restore(id string, saved *turnmodel.Cursor) {
	if saved == nil {
		t.Forget(id)
		return
	}
	s, _ := t.Session(id, time.Time{})
	c := saved.Clone()
	c.SetSession(s.cur.Session())
	s.cur, s.ids = c, idCache{}
	s.placed = false
	t.followTurn(s)
	if turn := s.cur.OpenTurn(); turn != 0 && !s.cur.TurnInherited() && s.openTurn == 0 {
		t.joinOpen(s, turn)
	}
}

// SetFork marks the session a fork whose first seedLength events are
// inherited from parent (a header's parentSession and seedLength): they are
// placed in the parent's spans. The cut given again costs nothing.
func (s *Session) SetFork(parent string, seedLength int64) {
	if p, n := s.cur.Fork(); p == parent && n == seedLength {
		return
	}
	s.cur.SetFork(parent, seedLength)
}

// LastSeq is the seq of the last event placed in the session, if any
// since it was added or restored.
func (s *Session) LastSeq() (int64, bool) { return s.lastSeq, s.placed }

// Advance moves the session's cursor past event e (decoded in format f)
// and returns where it belongs. A turn of the session's own that it opens
// counts against MaxOpenTurns: at the bound the turn open longest is
// closed first.
func (t *Table) Advance(s *Session, e *sessionlog.Event, f sessionlog.Format) turnmodel.Place {
	m := e.TurnModel(f)
	pl := s.cur.Advance(&m)
	s.lastSeq, s.placed = e.Seq, true
	t.followTurn(s)
	if e.Type == "turn/start" && pl.Kind == turnmodel.KindTurn && !pl.Inherited && s.openTurn == 0 {
		for t.open.Len() >= t.bounds.MaxOpenTurns {
			t.closeTurn(t.open.Front().Value)
		}
		t.joinOpen(s, pl.Turn)
	}
	return pl
}

// followTurn takes the session out of the open-turn order when the turn it
// is there for is no longer the cursor's open turn.
func (t *Table) followTurn(s *Session) {
	if s.openTurn != 0 && s.cur.OpenTurn() != s.openTurn {
		t.leaveOpen(s)
	}
}

// closeTurn closes the session's own open turn from outside (silence,
// eviction, the bound on open turns): its later events are late, as in
// the engine.
func (t *Table) closeTurn(s *Session) {
	if s.openTurn == 0 {
		return
	}
	t.leaveOpen(s)
	s.cur.CloseTurn()
}

// joinOpen puts the session at the back of the open-turn order for its
// open turn (turns are numbered from 1; 0 is none).
func (t *Table) joinOpen(s *Session, turn int64) {
	if turn == 0 {
		return
	}
	s.openElem.Value = s
	t.open.PushBackElem(&s.openElem)
	s.openTurn = turn
}

// leaveOpen takes the session out of the open-turn order.
func (t *Table) leaveOpen(s *Session) {
	if s.openTurn != 0 {
		t.open.Remove(&s.openElem)
		s.openTurn = 0
	}
}
