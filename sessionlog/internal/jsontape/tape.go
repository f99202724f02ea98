// Package jsontape parses one row of strict JSON (RFC 8259) in a single
// pass onto a tape of nodes, and reads the row's values through views of
// that tape. The pass that checks the row also flags the first number a
// lossless writer would not write (docs/format.md §4), and can check that
// the row's strings are UTF-8.
//
// It knows nothing of session logs: the codec above it maps its errors to
// violations and decides what a row means.
package jsontape

import (
	"math"
	"sync"
)

// A Tape is one row parsed in a single pass: the pass that checks the row
// is strict JSON also records every value as a node, in document order, so
// that lookups walk the nodes instead of scanning the row's bytes again.
//
// An object's node is followed by its members, each a key node (a string)
// then the value's nodes; an array's node by its elements' nodes. Every
// node knows where the nodes of the value after it start (next), so a
// lookup steps from member to member without looking inside them.
//
// Nodes hold offsets into the row, never copies: strings read through a
// tape share the row's memory, so the row's bytes must not change while
// they are used. The tape itself is scratch: it is reused for the next
// row, so nothing may keep a Value past the parse of the next row.
type Tape struct {
	s     string // the row, viewed as a string
	nodes []node
	stack []uint32 // the open containers' nodes while parsing
	// ints is scratch for the integers of an array read whole (Ints,
	// SafeInts), kept with the tape so that it is pooled with it.
	ints []int64
}

// node is one JSON value of a row (or an object member's key).
type node struct {
	// start and end delimit the value in the row: for a string the text
	// between its quotes, for anything else the whole value.
	start, end uint32
	// next is the index of the first node after this value (after all of
	// a container's contents).
	next uint32
	typ  Type
	// esc: a string with backslash escapes (its text must be unescaped);
	// on a number, a plain integer of at most 18 digits (Value.Int64 reads
	// its digits without checking them again).
	esc bool
}

// Type is the kind of a JSON value.
type Type uint8

// The kinds of JSON values; a missing value is Null.
const (
	Null Type = iota
	Object
	Array
	String
	Number
	True
	False
)

// String names the kind as JSON does: "object", "string", ….
func (t Type) String() string {
	return [...]string{"null", "object", "array", "string", "number", "true", "false"}[t]
}

// MaxDepth bounds the nesting Parse can be asked to accept: deeper rows
// are never legitimate.
const MaxDepth = 1024

// MaxRowBytes is the longest row a tape can index (node offsets are 32
// bits). A row that long would need tens of gigabytes of memory to decode
// anyway.
const MaxRowBytes = math.MaxUint32 - 1

// maxRowBytes is MaxRowBytes as a variable, so that lowering an int to it
// compiles where int has 32 bits (there it never applies).
var maxRowBytes uint64 = MaxRowBytes

// LimitRowBytes is n lowered to MaxRowBytes: the longest row a reader
// that promises rows of up to n bytes can parse onto a tape.
func LimitRowBytes(n int) int {
	if uint64(n) > maxRowBytes {
		return int(maxRowBytes)
	}
	return n
}

// maxPooledNodes bounds the memory a tape keeps for the next row: what a
// huge row grew beyond it is left to the garbage collector.
const maxPooledNodes = 1 << 16

var pool = sync.Pool{New: func() any { return new(Tape) }}

// Get takes a tape from the pool of tapes for reuse.
func Get() *Tape { return pool.Get().(*Tape) }

// Put gives a tape back to the pool; nothing may use it, or a Value of
// it, afterwards.
func Put(t *Tape) {
	t.Reset()
	pool.Put(t)
}

// Reset forgets the row (the tape no longer holds its memory alive) and
// the memory a huge row grew.
func (t *Tape) Reset() {
	t.s = ""
	if cap(t.nodes) > maxPooledNodes {
		t.nodes = nil
	}
	if cap(t.stack) > MaxDepth {
		t.stack = nil
	}
	if cap(t.ints) > maxPooledNodes {
		t.ints = nil
	}
}
