package sessiontable

// List is a doubly-linked list of values in the order they were pushed or
// last moved to its back: the front is the oldest. An element is its own
// handle, so a value that keeps its element is moved or removed in O(1)
// without a lookup. The zero List is empty and ready to use.
type List[V any] struct {
	root Elem[V] // sentinel: root.next is the front, root.prev the back
	n    int
}

// Elem is one value of a List.
type Elem[V any] struct {
	// Value is the value the element holds.
	Value      V
	prev, next *Elem[V]
	list       *List[V]
	id         string // the session's, in a Table
}

// Next is the element behind e (toward the back), or nil.
func (e *Elem[V]) Next() *Elem[V] {
	if n := e.next; e.list != nil && n != &e.list.root {
		return n
	}
	return nil
}

func (l *List[V]) lazyInit() {
	if l.root.next == nil {
		l.root.next, l.root.prev = &l.root, &l.root
	}
}

// Len is the number of elements.
func (l *List[V]) Len() int { return l.n }

// Front is the oldest element, or nil.
func (l *List[V]) Front() *Elem[V] {
	if l.n == 0 {
		return nil
	}
	return l.root.next
}

// PushBack adds v at the back and returns its element.
func (l *List[V]) PushBack(v V) *Elem[V] {
	l.lazyInit()
	e := &Elem[V]{Value: v, list: l}
	l.link(e)
	l.n++
	return e
}

// PushBackElem adds e at the back: an element that is in no list — a
// zero Elem its owner keeps, or one removed before — so a value that keeps
// its own element joins and leaves a list without an allocation. An
// element already in a list stays where it is.
func (l *List[V]) PushBackElem(e *Elem[V]) {
	if e.list != nil {
		return
	}
	l.lazyInit()
	e.list = l
	l.link(e)
	l.n++
}

// MoveToBack makes e the newest element. e must be an element of l.
func (l *List[V]) MoveToBack(e *Elem[V]) {
	if e.list != l || l.root.prev == e {
		return
	}
	l.unlink(e)
	l.link(e)
}

// Remove takes e out of l; removing an element twice, or one of another
// list, does nothing.
func (l *List[V]) Remove(e *Elem[V]) {
	if e == nil || e.list != l {
		return
	}
	l.unlink(e)
	e.list = nil
	l.n--
}

func (l *List[V]) link(e *Elem[V]) {
	back := l.root.prev
	e.prev, e.next = back, &l.root
	back.next = e
	l.root.prev = e
}

func (l *List[V]) unlink(e *Elem[V]) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}
