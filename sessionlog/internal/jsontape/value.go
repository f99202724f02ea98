package jsontape

import (
	"iter"
	"strconv"
)

// Value is a read-only view of one JSON value of a row parsed onto a tape.
// A lookup steps over the nodes of the object's members (no bytes are
// scanned again); strings without escapes are returned as views of the
// row, numbers are read from their text only when asked for.
//
// The zero Value is a missing value. Values of one tape compare equal
// exactly when they are the same value. A Value is valid while its tape
// holds its row; strings read through it stay valid as long as the row's
// bytes.
type Value struct {
	t *Tape
	i uint32
}

// Root is the row's top-level value; Parse must have succeeded.
func (t *Tape) Root() Value { return Value{t: t} }

// Exists reports whether the value exists.
func (v Value) Exists() bool { return v.t != nil }

// Type is the value's kind; a missing value is Null.
func (v Value) Type() Type {
	if v.t == nil {
		return Null
	}
	return v.t.nodes[v.i].typ
}

// Raw is the value's JSON text, exactly as in the row ("" when missing).
func (v Value) Raw() string {
	if v.t == nil {
		return ""
	}
	n := &v.t.nodes[v.i]
	if n.typ == String {
		return v.t.s[n.start-1 : n.end+1]
	}
	return v.t.s[n.start:n.end]
}

// str is a string node's text, unescaped.
func (t *Tape) str(i uint32) string {
	n := &t.nodes[i]
	s := t.s[n.start:n.end]
	if n.esc {
		s = unescape(s)
	}
	return s
}

// keyIs reports whether the key node i names key.
func (t *Tape) keyIs(i uint32, key string) bool {
	n := &t.nodes[i]
	if n.esc {
		return t.escapedKeyIs(n, key)
	}
	return n.end-n.start == uint32(len(key)) && t.s[n.start:n.end] == key
}

func (t *Tape) escapedKeyIs(n *node, key string) bool {
	// Unescaping never lengthens a string.
	return int(n.end-n.start) >= len(key) && unescape(t.s[n.start:n.end]) == key
}

// get1 is Get with one key.
func (v Value) get1(key string) Value {
	t := v.t
	n := &t.nodes[v.i]
	switch n.typ {
	case Object:
		for k := v.i + 1; k < n.next; k = t.nodes[k+1].next {
			kn := &t.nodes[k]
			if kn.end-kn.start == uint32(len(key)) && !kn.esc && t.s[kn.start:kn.end] == key ||
				kn.esc && t.escapedKeyIs(kn, key) {
				return Value{t, k + 1}
			}
		}
	case Array:
		idx, err := strconv.Atoi(key)
		if err != nil {
			return Value{}
		}
		return v.Index(idx)
	}
	return Value{}
}

// Get looks up a member path: each key names an object member (the first
// of that name), or an array element by its decimal index.
func (v Value) Get(keys ...string) Value {
	for _, k := range keys {
		if v.t == nil {
			return Value{}
		}
		v = v.get1(k)
	}
	return v
}

// Index is an array's element k (missing when it has no such element or
// is no array).
func (v Value) Index(k int) Value {
	if v.Type() != Array || k < 0 {
		return Value{}
	}
	t := v.t
	end := t.nodes[v.i].next
	for x := v.i + 1; x < end; x = t.nodes[x].next {
		if k == 0 {
			return Value{t, x}
		}
		k--
	}
	return Value{}
}

// Pair is the elements of an array of exactly two; ok is false for
// anything else.
func (v Value) Pair() (a, b Value, ok bool) {
	if v.Type() != Array {
		return Value{}, Value{}, false
	}
	t := v.t
	end := t.nodes[v.i].next
	first := v.i + 1
	if first >= end {
		return Value{}, Value{}, false
	}
	second := t.nodes[first].next
	if second >= end || t.nodes[second].next != end {
		return Value{}, Value{}, false
	}
	return Value{t, first}, Value{t, second}, true
}

// Get2 is Get(k1), Get(k2) of an object in one walk over its members.
func (v Value) Get2(k1, k2 string) (a, b Value) {
	if v.t == nil || v.t.nodes[v.i].typ != Object {
		return Value{}, Value{}
	}
	t := v.t
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k+1].next {
		switch {
		case a.t == nil && t.keyIs(k, k1):
			a = Value{t, k + 1}
		case b.t == nil && t.keyIs(k, k2):
			b = Value{t, k + 1}
		default:
			continue
		}
		if a.t != nil && b.t != nil {
			break
		}
	}
	return a, b
}

// Gather looks up several members of an object in one walk: out[member(k)]
// is set to the value of the first member named k (as Get finds it), for
// every key k that member maps to an index of out (-1: a key the caller
// does not read). Nothing is set when v is no object.
func (v Value) Gather(member func(key string) int, out []Value) {
	if v.Type() != Object {
		return
	}
	t := v.t
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k+1].next {
		if x := member(t.str(k)); x >= 0 && !out[x].Exists() {
			out[x] = Value{t, k + 1}
		}
	}
}

// Members walks an object's members in order, each key unescaped (none
// when v is no object).
func (v Value) Members() iter.Seq2[string, Value] {
	return func(yield func(string, Value) bool) {
		if v.Type() != Object {
			return
		}
		t := v.t
		end := t.nodes[v.i].next
		for k := v.i + 1; k < end; k = t.nodes[k+1].next {
			n := &t.nodes[k] // t.str(k), which is too large to inline
			key := t.s[n.start:n.end]
			if n.esc {
				key = unescape(key)
			}
			if !yield(key, Value{t, k + 1}) {
				return
			}
		}
	}
}

// Elements walks an array's elements in order (none when v is no array).
func (v Value) Elements() iter.Seq[Value] {
	return func(yield func(Value) bool) {
		if v.Type() != Array {
			return
		}
		t := v.t
		end := t.nodes[v.i].next
		for k := v.i + 1; k < end; k = t.nodes[k].next {
			if !yield(Value{t, k}) {
				return
			}
		}
	}
}

// ArrayLen counts an array's elements (0 for anything else).
func (v Value) ArrayLen() int {
	if v.Type() != Array {
		return 0
	}
	t := v.t
	c := 0
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k].next {
		c++
	}
	return c
}

// ObjectLen counts an object's members (0 for anything else).
func (v Value) ObjectLen() int {
	if v.Type() != Object {
		return 0
	}
	t := v.t
	c := 0
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k+1].next {
		c++
	}
	return c
}

// String is the value's text when it is a string, else "".
func (v Value) String() string {
	if v.t == nil || v.t.nodes[v.i].typ != String {
		return ""
	}
	return v.t.str(v.i)
}

// GetString is the string at the path, or "" for anything else.
func (v Value) GetString(keys ...string) string {
	return v.Get(keys...).String()
}

// GetBool is the boolean at the path (false for anything else).
func (v Value) GetBool(keys ...string) bool {
	return v.Get(keys...).Type() == True
}

// EncodedLen is the length of a string value's JSON text between the
// quotes (zero exactly when the string is empty); 0 for anything else.
func (v Value) EncodedLen() int {
	if v.t == nil || v.t.nodes[v.i].typ != String {
		return 0
	}
	n := &v.t.nodes[v.i]
	return int(n.end - n.start)
}

// UnescapedLen is len(v.String()) without building the string.
func (v Value) UnescapedLen() int {
	if v.t == nil || v.t.nodes[v.i].typ != String {
		return 0
	}
	n := &v.t.nodes[v.i]
	if !n.esc {
		return int(n.end - n.start)
	}
	return unescapedLen(v.t.s[n.start:n.end])
}

// Bool is the value as a boolean.
func (v Value) Bool() (bool, error) {
	switch v.Type() {
	case True:
		return true, nil
	case False:
		return false, nil
	}
	return false, errNotBool
}
