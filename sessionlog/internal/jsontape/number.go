package jsontape

import "strconv"

// Int64 is the value as an exact integer; a fraction or exponent is an error.
func (v Value) Int64() (int64, error) {
	if v.Type() != Number {
		return 0, errNotNumber
	}
	n := &v.t.nodes[v.i]
	if n.esc { // a plain integer of at most 18 digits (Tape.Parse)
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
func (v Value) Int() (int, error) {
	n, err := v.Int64()
	return int(n), err
}

// SafeInt is the value as a safe integer (an integer within
// ±MaxSafeInteger, without fraction or exponent); false for anything else.
func (v Value) SafeInt() (int64, bool) {
	n, err := v.Int64()
	if err != nil || uint64(n+MaxSafeInteger) > 2*MaxSafeInteger { // outside ±MaxSafeInteger
		return 0, false
	}
	return n, true
}

// SafeInts reads an array of safe integers whole: the elements up to the
// first that is no safe integer, and whether every element is one (an
// empty result and true when v is no array). The slice is the tape's
// scratch, valid until the next SafeInts or Ints of a value of the tape.
func (v Value) SafeInts() (ints []int64, ok bool) {
	if v.Type() != Array {
		return nil, true
	}
	t := v.t
	ints, ok = t.ints[:0], true
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k].next {
		var n int64
		if x := &t.nodes[k]; x.typ == Number && x.esc { // a plain integer: read at once
			n = plainInt(t.s, int(x.start), int(x.end))
			ok = uint64(n+MaxSafeInteger) <= 2*MaxSafeInteger
		} else {
			n, ok = Value{t, k}.SafeInt()
		}
		if !ok {
			break
		}
		ints = append(ints, n)
	}
	t.ints = ints[:0]
	return ints, ok
}

// Ints reads an array's elements as Int64 reads them, 0 for an element
// that is no integer (none when v is no array). The slice is the tape's
// scratch, valid until the next SafeInts or Ints of a value of the tape.
func (v Value) Ints() []int64 {
	if v.Type() != Array {
		return nil
	}
	ints := v.t.ints[:0]
	for x := range v.Elements() {
		n, _ := x.Int64()
		ints = append(ints, n)
	}
	v.t.ints = ints[:0]
	return ints
}
