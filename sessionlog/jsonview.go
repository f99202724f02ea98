package sessionlog

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// jv is a read-only view of one JSON value of a row parsed onto a tape. A
// lookup steps over the nodes of the object's members (no bytes are
// scanned again); strings without escapes are returned as views of the
// row, numbers are read from their text only when asked for.
//
// The zero jv is a missing value. A jv is valid while its tape holds its
// row; strings read through it stay valid as long as the row's bytes.
type jv struct {
	t *tape
	i uint32
}

// jtype is the kind of a JSON value.
type jtype uint8

const (
	tNull jtype = iota
	tObject
	tArray
	tString
	tNumber
	tTrue
	tFalse
)

func (t jtype) String() string {
	return [...]string{"null", "object", "array", "string", "number", "true", "false"}[t]
}

// ok reports whether the value exists.
func (v jv) ok() bool { return v.t != nil }

// Type is the value's kind; a missing value is null.
func (v jv) Type() jtype {
	if v.t == nil {
		return tNull
	}
	return v.t.nodes[v.i].typ
}

// raw is the value's JSON text, exactly as in the row ("" when missing).
func (v jv) raw() string {
	if v.t == nil {
		return ""
	}
	n := &v.t.nodes[v.i]
	if n.typ == tString {
		return v.t.s[n.start-1 : n.end+1]
	}
	return v.t.s[n.start:n.end]
}

// str is a string node's text, unescaped.
func (t *tape) str(i uint32) string {
	n := &t.nodes[i]
	if n.esc {
		return unescape(t.s[n.start:n.end])
	}
	return t.s[n.start:n.end]
}

// keyIs reports whether the key node i names key.
func (t *tape) keyIs(i uint32, key string) bool {
	n := &t.nodes[i]
	if n.esc {
		return t.escapedKeyIs(n, key)
	}
	return n.end-n.start == uint32(len(key)) && t.s[n.start:n.end] == key
}

func (t *tape) escapedKeyIs(n *tnode, key string) bool {
	// Unescaping never lengthens a string.
	return int(n.end-n.start) >= len(key) && unescape(t.s[n.start:n.end]) == key
}

func (v jv) get1(key string) jv {
	t := v.t
	n := &t.nodes[v.i]
	switch n.typ {
	case tObject:
		for k := v.i + 1; k < n.next; k = t.nodes[k+1].next {
			kn := &t.nodes[k]
			if kn.end-kn.start == uint32(len(key)) && !kn.esc && t.s[kn.start:kn.end] == key ||
				kn.esc && t.escapedKeyIs(kn, key) {
				return jv{t, k + 1}
			}
		}
	case tArray:
		idx, err := strconv.Atoi(key)
		if err != nil || idx < 0 {
			return jv{}
		}
		for k := v.i + 1; k < n.next; k = t.nodes[k].next {
			if idx == 0 {
				return jv{t, k}
			}
			idx--
		}
	}
	return jv{}
}

// gather looks up several members of an object in one walk: out[member(k)]
// is set to the value of the first member named k (as Get finds it), for
// every key k that member maps to an index of out (-1: a key the caller
// does not read). Nothing is set when v is no object.
func (v jv) gather(member func(key string) int, out []jv) {
	if v.Type() != tObject {
		return
	}
	t := v.t
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k+1].next {
		if x := member(t.str(k)); x >= 0 && !out[x].ok() {
			out[x] = jv{t, k + 1}
		}
	}
}

// get2 is get1(k1), get1(k2) of an object in one walk over its members.
func (v jv) get2(k1, k2 string) (a, b jv) {
	if v.t == nil || v.t.nodes[v.i].typ != tObject {
		return jv{}, jv{}
	}
	t := v.t
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k+1].next {
		switch {
		case a.t == nil && t.keyIs(k, k1):
			a = jv{t, k + 1}
		case b.t == nil && t.keyIs(k, k2):
			b = jv{t, k + 1}
		default:
			continue
		}
		if a.t != nil && b.t != nil {
			break
		}
	}
	return a, b
}

// Get looks up a member path: each key names an object member (the first
// of that name), or an array element by its decimal index.
func (v jv) Get(keys ...string) jv {
	for _, k := range keys {
		if v.t == nil {
			return jv{}
		}
		v = v.get1(k)
	}
	return v
}

// String is the value's text when it is a string, else "".
func (v jv) String() string {
	if v.t == nil || v.t.nodes[v.i].typ != tString {
		return ""
	}
	return v.t.str(v.i)
}

// strLen is the length of a string value's JSON text between the quotes
// (zero exactly when the string is empty); 0 for anything else.
func (v jv) strLen() int {
	if v.t == nil || v.t.nodes[v.i].typ != tString {
		return 0
	}
	n := &v.t.nodes[v.i]
	return int(n.end - n.start)
}

// unescapedLen is len(v.String()) without building the string.
func (v jv) unescapedLen() int {
	if v.t == nil || v.t.nodes[v.i].typ != tString {
		return 0
	}
	n := &v.t.nodes[v.i]
	if !n.esc {
		return int(n.end - n.start)
	}
	return unescapedLen(v.t.s[n.start:n.end])
}

// GetStringBytes is the string at the path, or "" for anything else.
func (v jv) GetStringBytes(keys ...string) string {
	return v.Get(keys...).String()
}

// GetBool is the boolean at the path (false for anything else).
func (v jv) GetBool(keys ...string) bool {
	return v.Get(keys...).Type() == tTrue
}

// GetArray is the array at the path, or nil.
func (v jv) GetArray(keys ...string) []jv {
	var out []jv
	v.Get(keys...).each(func(el jv) bool {
		out = append(out, el)
		return true
	})
	return out
}

// each calls f for each element of an array, in order, until f returns
// false; it reports whether v is an array.
func (v jv) each(f func(el jv) bool) bool {
	if v.Type() != tArray {
		return false
	}
	t := v.t
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k].next {
		if !f(jv{t, k}) {
			break
		}
	}
	return true
}

// first is an array's first element (missing when it has none), for a walk
// with after.
func (v jv) first() jv {
	if v.Type() != tArray || v.t.nodes[v.i].next == v.i+1 {
		return jv{}
	}
	return jv{v.t, v.i + 1}
}

// elems is an array's first element and the index that ends its
// elements, for a walk with after while x.i < end (no elements when v is
// no array).
func (v jv) elems() (x jv, end uint32) {
	if v.Type() != tArray {
		return jv{}, 0
	}
	return jv{v.t, v.i + 1}, v.t.nodes[v.i].next
}

// after is the value after v: its next sibling in the enclosing array when
// v is an array element and not the last one. Walking past the last
// element is the caller's to prevent (it yields the array's follower).
func (v jv) after() jv {
	if v.t == nil {
		return jv{}
	}
	return jv{v.t, v.t.nodes[v.i].next}
}

// arrayLen counts an array's elements (0 for anything else).
func (v jv) arrayLen() int {
	if v.Type() != tArray {
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

type jsonError string

func (e jsonError) Error() string { return string(e) }

const (
	errNotInt    jsonError = "not an integer"
	errNotBool   jsonError = "not a boolean"
	errNotNumber jsonError = "not a number"
)

// Int64 is the value as an exact integer; a fraction or exponent is an error.
func (v jv) Int64() (int64, error) {
	if v.Type() != tNumber {
		return 0, errNotNumber
	}
	n := &v.t.nodes[v.i]
	if n.esc { // a plain integer of at most 18 digits (tape.parse)
		return plainInt(v.t.s, int(n.start), int(n.end)), nil
	}
	s := v.t.s[n.start:n.end]
	// Up to 18 digits cannot overflow; checked JSON has no '+' and no
	// leading zeros.
	d := s
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) <= 18 {
		var x int64
		for i := 0; i < len(d); i++ {
			c := d[i]
			if c < '0' || c > '9' {
				return 0, errNotInt
			}
			x = x*10 + int64(c-'0')
		}
		if s[0] == '-' {
			x = -x
		}
		return x, nil
	}
	x, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errNotInt
	}
	return x, nil
}

// plainInt is the value of row[start:end], an optional '-' and 1 to 18
// ASCII digits. Eight digits at a time where the row has eight bytes from
// where they are read, digit by digit otherwise.
func plainInt(row string, start, end int) int64 {
	neg := row[start] == '-'
	if neg {
		start++
	}
	var x int64
	switch l := end - start; {
	case l <= 8 && start+8 <= len(row):
		// The l digits are the low bytes; shifted to the top, the bytes
		// below them are zeros: leading zero digits.
		x = int64(digits8(load64(row, start) << ((64 - 8*l) & 63)))
	case l > 8 && l <= 16:
		hi := load64(row, start) << ((128 - 8*l) & 63)
		lo := load64(row, end-8)
		x = int64(digits8(hi)*1e8 + digits8(lo))
	default:
		for i := start; i < end; i++ {
			x = x*10 + int64(row[i]-'0')
		}
	}
	if neg {
		x = -x
	}
	return x
}

// load64 is the eight bytes of s from i on, the first in the lowest byte
// (one load: the compiler merges the bytes' reads).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// digits8 is the number eight ASCII digits (or zero bytes, read as 0) spell,
// the first in the lowest byte of x: neighbouring digits are combined into
// pairs, pairs into fours and fours into the eight with one multiplication
// each (a lane's low part times the power of ten plus its high part).
func digits8(x uint64) uint64 {
	x = (x & 0x0F0F0F0F0F0F0F0F) * (10<<8 + 1) >> 8
	x = (x & 0x00FF00FF00FF00FF) * (100<<16 + 1) >> 16
	x = (x & 0x0000FFFF0000FFFF) * (10000<<32 + 1) >> 32
	return x & 0xFFFFFFFF
}

// Int is Int64 as an int.
func (v jv) Int() (int, error) {
	n, err := v.Int64()
	return int(n), err
}

// Bool is the value as a boolean.
func (v jv) Bool() (bool, error) {
	switch v.Type() {
	case tTrue:
		return true, nil
	case tFalse:
		return false, nil
	}
	return false, errNotBool
}

// MarshalTo appends the value's JSON text, exactly as in the row.
func (v jv) MarshalTo(dst []byte) []byte { return append(dst, v.raw()...) }

// object is an object value's members.
type object struct{ v jv }

// GetObject views the value as an object.
func (v jv) GetObject() object { return object{v} }

// Visit calls f for each member in order, with its key unescaped.
func (o object) Visit(f func(k string, v jv)) {
	if o.v.Type() != tObject {
		return
	}
	t := o.v.t
	end := t.nodes[o.v.i].next
	for k := o.v.i + 1; k < end; k = t.nodes[k+1].next {
		f(t.str(k), jv{t, k + 1})
	}
}

// visitRaw calls f for each member in order with the index of its key
// node (for tape.keyIs) instead of the key.
func (o object) visitRaw(f func(k uint32, v jv)) {
	if o.v.Type() != tObject {
		return
	}
	t := o.v.t
	end := t.nodes[o.v.i].next
	for k := o.v.i + 1; k < end; k = t.nodes[k+1].next {
		f(k, jv{t, k + 1})
	}
}

// Len is the number of members.
func (o object) Len() int {
	if o.v.Type() != tObject {
		return 0
	}
	t := o.v.t
	c := 0
	end := t.nodes[o.v.i].next
	for k := o.v.i + 1; k < end; k = t.nodes[k+1].next {
		c++
	}
	return c
}

// unescape decodes the text of a checked JSON string (between its quotes)
// as the gjson reader this package used before did, byte for byte: a \u
// escape of a lone surrogate becomes U+FFFD, a surrogate pair one rune.
func unescape(s string) string {
	out := make([]byte, 0, len(s))
	for {
		i := strings.IndexByte(s, '\\')
		if i < 0 {
			out = append(out, s...)
			break
		}
		out = append(out, s[:i]...)
		s = s[i+1:] // the parser checked: an escape follows
		switch s[0] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[1:])
			s = s[5:]
			if r >= 0xD800 && r < 0xDC00 && len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
				if r2 := hex4(s[2:]); r2 >= 0xDC00 && r2 < 0xE000 {
					r = utf16.DecodeRune(r, r2)
					s = s[6:]
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, s[0])
		}
		s = s[1:]
	}
	// out is this call's own and never written again.
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// unescapedLen is len(unescape(s)).
func unescapedLen(s string) int {
	l := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			l++
			continue
		}
		i++
		if s[i] != 'u' {
			l++
			continue
		}
		r := hex4(s[i+1:])
		i += 4
		if r >= 0xD800 && r < 0xDC00 && len(s)-i > 6 && s[i+1] == '\\' && s[i+2] == 'u' {
			if r2 := hex4(s[i+3:]); r2 >= 0xDC00 && r2 < 0xE000 {
				r = utf16.DecodeRune(r, r2)
				i += 6
			}
		}
		if n := utf8.RuneLen(r); n > 0 {
			l += n
		} else {
			l += len(string(utf8.RuneError)) // a lone surrogate
		}
	}
	return l
}

// hex4 is the value of four hex digits (checked by the parser).
func hex4(s string) rune {
	var r rune
	for _, c := range []byte(s[:4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
