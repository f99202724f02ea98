package sessiontable

// Table maps session ids to the state of a session, at most Max of them,
// in order of last use. It is not safe for concurrent use.
type Table[V any] struct {
	max   int
	byID  map[string]*Elem[V]
	order List[V]
}

// New returns an empty table of at most bound sessions; a bound below one
// holds one session.
func New[V any](bound int) *Table[V] {
	return &Table[V]{max: max(bound, 1), byID: map[string]*Elem[V]{}}
}

// Max is the table's bound.
func (t *Table[V]) Max() int { return t.max }

// Len is the number of sessions held.
func (t *Table[V]) Len() int { return len(t.byID) }

// Full reports whether adding a session needs one to leave first.
func (t *Table[V]) Full() bool { return len(t.byID) >= t.max }

// Get returns the session's state and makes it the most recently used.
func (t *Table[V]) Get(id string) (v V, ok bool) {
	e := t.byID[id]
	if e == nil {
		return v, false
	}
	t.order.MoveToBack(e)
	return e.Value, true
}

// Peek returns the session's state without touching its order.
func (t *Table[V]) Peek(id string) (v V, ok bool) {
	e := t.byID[id]
	if e == nil {
		return v, false
	}
	return e.Value, true
}

// Add holds v as session id's state, the most recently used, and returns
// its element, which Touch takes. The table keeps id as given: pass a
// string of the caller's own, not a view into a row. Adding beyond Max is
// the caller's choice (check Full first); adding an id already held
// replaces its state.
func (t *Table[V]) Add(id string, v V) *Elem[V] {
	if e := t.byID[id]; e != nil {
		e.Value = v
		t.order.MoveToBack(e)
		return e
	}
	e := t.order.PushBack(v)
	e.id = id
	t.byID[id] = e
	return e
}

// Touch makes the session of element e the most recently used, without a
// lookup.
func (t *Table[V]) Touch(e *Elem[V]) { t.order.MoveToBack(e) }

// Oldest returns the least recently used session.
func (t *Table[V]) Oldest() (id string, v V, ok bool) {
	e := t.order.Front()
	if e == nil {
		return "", v, false
	}
	return e.id, e.Value, true
}

// Remove forgets session id; it reports whether it was held.
func (t *Table[V]) Remove(id string) bool {
	e := t.byID[id]
	if e == nil {
		return false
	}
	delete(t.byID, id)
	t.order.Remove(e)
	return true
}

// Ascending calls f for each session from the least to the most recently
// used until f returns false. f must not add or remove sessions.
func (t *Table[V]) Ascending(f func(id string, v V) bool) {
	for e := t.order.Front(); e != nil; e = e.Next() {
		if !f(e.id, e.Value) {
			return
		}
	}
}
