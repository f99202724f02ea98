package jsontape

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Parse checks that b holds exactly one RFC 8259 JSON value nested at most
// maxDepth deep (at most MaxDepth) and records it on the tape, in one pass
// without recursion.
//
// With checkUTF8, the non-ASCII bytes of strings must be UTF-8 (an
// InvalidUTF8 error otherwise); since JSON has non-ASCII bytes nowhere
// else, a row that parses is then valid UTF-8. A row that does not parse
// may still hold bad UTF-8 after the error: callers that report UTF-8
// first check the row with utf8.Valid when Parse fails. Without checkUTF8,
// any byte ≥ 0x80 in a string is taken as it is.
//
// It returns the first syntax error (the row is no JSON, or too deep) and,
// separately, the first number that is not lossless (the row still
// parses). The nodes are meaningful only when syntax is nil. len(b) must
// not exceed MaxRowBytes.
//
// Parse is a machine of three states — at a value, after a value, at an
// object's key — that reads the row from left to right; what a token
// spells and the node it becomes are the steps below it, inlined where
// they are hot (a call per token would cost more than the steps).
func (t *Tape) Parse(b []byte, maxDepth int, checkUTF8 bool) (syntax, lossless *Error) {
	t.s = unsafe.String(unsafe.SliceData(b), len(b))
	nodes, stack, n := t.nodes[:0], t.stack[:0], len(b)
	var c byte
	var start, end int
	var esc, plain, isInt bool // esc: a string with escapes, a number that is a short plain integer
	var top uint32             // the innermost open container's node
	i := skipSpace(b, 0)
	if i >= n {
		return t.done(nodes, stack, invalidAt(i, "empty row"), lossless)
	}

value: // at a value, perhaps after whitespace
	if i = skipSpaceAt(b, i); i >= n {
		return t.done(nodes, stack, invalidAt(n, "unexpected end of row, a value is missing"), lossless)
	}
	switch c = b[i]; {
	case c == '"':
		if end, plain = quoteStop(b, i); !plain {
			end = plainString(b, end)
		}
		if esc = false; end >= n || b[end] != '"' {
			if end, esc, syntax = stringEnd(b, i, end, checkUTF8); syntax != nil {
				return t.done(nodes, stack, syntax, lossless)
			}
		}
		nodes = append(nodes, leaf(i+1, end, len(nodes), String, esc))
		i = end + 1
	case c == '{' || c == '[':
		if len(stack) >= maxDepth {
			return t.done(nodes, stack, tooDeep(i, maxDepth), lossless)
		}
		stack = append(stack, uint32(len(nodes)))
		nodes = append(nodes, node{start: uint32(i), typ: container(c)})
		if i = skipSpaceAt(b, i+1); i < n && b[i] == c+2 { // '{'+2 is '}', '['+2 is ']'
			stack = closeAt(nodes, stack, i)
			i++
			goto after
		}
		if c == '[' {
			goto value
		}
		goto key
	case c == '-' || c-'0' < 10:
		start, end = i, digitsStart(b, i) // end: the first digit
		if i, esc = digitsEnd(b, end), false; plainDigits(b, end, i) {
			isInt, esc = true, i-end <= 18
		} else if i, isInt, syntax = readNumber(b, start); syntax != nil { // a fraction, an exponent or no number
			return t.done(nodes, stack, syntax, lossless)
		}
		if lossless == nil && mayBeLossy(b, start, i, isInt) {
			lossless = notLossless(b, start, i, isInt)
		}
		nodes = append(nodes, leaf(start, i, len(nodes), Number, esc))
	default: // true, false, null or no value
		if nodes, i, syntax = literal(nodes, b, i); syntax != nil {
			return t.done(nodes, stack, syntax, lossless)
		}
	}

after: // after a value, perhaps before whitespace
	if i = skipSpaceAt(b, i); len(stack) == 0 || i >= n {
		return t.done(nodes, stack, ended(i, n, len(stack)), lossless)
	}
	top = stack[len(stack)-1]
	switch c = b[i]; {
	case c == ',':
		if i++; nodes[top].typ == Array {
			goto value
		}
		i = skipSpaceAt(b, i)
		goto key
	case c == '}' && nodes[top].typ == Object, c == ']' && nodes[top].typ == Array:
		stack = closeAt(nodes, stack, i)
		i++
		goto after
	}
	return t.done(nodes, stack, unexpected(b, i, " after a value"), lossless)

key: // at an object's key, after whitespace
	if i >= n || b[i] != '"' {
		return t.done(nodes, stack, invalidAt(i, "object key expected"), lossless)
	}
	if end, plain = quoteStop(b, i); !plain {
		end = plainString(b, end)
	}
	if esc = false; end >= n || b[end] != '"' {
		if end, esc, syntax = stringEnd(b, i, end, checkUTF8); syntax != nil {
			return t.done(nodes, stack, syntax, lossless)
		}
	}
	nodes = append(nodes, leaf(i+1, end, len(nodes), String, esc))
	if i = skipSpaceAt(b, end+1); i >= n || b[i] != ':' {
		return t.done(nodes, stack, invalidAt(i, "':' expected after an object key"), lossless)
	}
	i++
	goto value
}

// done ends a parse with its errors: the nodes' and the stack's memory is
// kept for the next row, and a row that is not JSON has no numbers to
// judge.
func (t *Tape) done(nodes []node, stack []uint32, syntax, lossless *Error) (*Error, *Error) {
	t.nodes, t.stack = nodes, stack
	if syntax != nil && syntax.Kind == InvalidJSON {
		lossless = nil
	}
	return syntax, lossless
}

// The steps of Parse that are not a state of it: what a token spells, and
// the node it becomes. The small ones are inlined into Parse.

// quoteStop looks for the end of the plain text of the string whose
// opening quote is b[i] in the eight bytes after the quote, where most
// keys and many values end: plain reports that it is there, at end; else
// plainString looks on from end.
func quoteStop(b []byte, i int) (end int, plain bool) {
	end = i + 1
	if len(b)-end >= 8 {
		m := stops(binary.LittleEndian.Uint64(b[end:]))
		end += bits.TrailingZeros64(m) >> 3 // 8 when none of the bytes stops
		plain = m != 0
	}
	return end, plain
}

// stringEnd reads the rest of a string that is not plain from b[j] on
// (scanString) and returns the index of its closing quote and whether it
// holds escapes, or the error.
func stringEnd(b []byte, i, j int, checkUTF8 bool) (end int, esc bool, err *Error) {
	end, esc, msg, off := scanString(b, i, j, checkUTF8)
	switch msg {
	case "":
		return end, esc, nil
	case msgBadUTF8:
		return 0, false, &Error{Kind: InvalidUTF8, Offset: off, Msg: msg}
	}
	return 0, false, invalidAt(off, msg)
}

// digitsStart is the index of the first digit of the number at b[i].
func digitsStart(b []byte, i int) int {
	if b[i] == '-' {
		return i + 1
	}
	return i
}

// plainDigits reports whether the digits b[first:end] of a number make it
// a plain integer: one digit at least, no leading zero, no fraction or
// exponent after them. Value.Int64 reads one of at most 18 digits without
// checks.
func plainDigits(b []byte, first, end int) bool {
	return end > first && (b[first] != '0' || end == first+1) && (end >= len(b) || b[end] != '.' && b[end]|0x20 != 'e')
}

// readNumber reads any JSON number at b[i] (scanNumber): the index after it
// and whether it is an integer, or the error.
func readNumber(b []byte, i int) (end int, isInt bool, err *Error) {
	end, isInt, msg := scanNumber(b, i)
	if msg != "" {
		return 0, false, invalidAt(end, msg)
	}
	return end, isInt, nil
}

// mayBeLossy reports whether the number b[start:end] needs the lossless
// check: integers of up to 15 characters other than -0 never fail it.
func mayBeLossy(b []byte, start, end int, isInt bool) bool {
	return !isInt || end-start >= 16 || end-start == 2 && b[start] == '-' && b[start+1] == '0'
}

// notLossless is the error of the number b[start:end] when it is not
// lossless (numberLossless), else nil.
func notLossless(b []byte, start, end int, isInt bool) *Error {
	if msg := numberLossless(b[start:end], isInt); msg != "" {
		return &Error{Kind: NotLossless, Offset: start, Msg: msg}
	}
	return nil
}

// ended is the error, if any, of a value that ends at b[i], before n, at
// nesting depth: data after the row's value, or the row ending inside a
// container.
func ended(i, n, depth int) *Error {
	switch {
	case depth > 0:
		return invalidAt(n, "unexpected end of row inside a container")
	case i != n:
		return invalidAt(i, "unexpected data after the JSON value")
	}
	return nil
}

// literal reads true, false or null at b[i] onto the tape (nodes): the
// index after it, or the error (no value starts there).
func literal(nodes []node, b []byte, i int) ([]node, int, *Error) {
	var typ Type
	switch c := b[i]; {
	case c == 't' && hasLit(b, i, "true"):
		typ = True
	case c == 'f' && hasLit(b, i, "false"):
		typ = False
	case c == 'n' && hasLit(b, i, "null"):
		typ = Null
	case c == 't' || c == 'f' || c == 'n':
		return nodes, i, invalidAt(i, "invalid literal")
	default:
		return nodes, i, unexpected(b, i, "")
	}
	end := i + len(typ.String())
	return append(nodes, leaf(i, end, len(nodes), typ, false)), end, nil
}

// leaf is the node of a scalar that is the at-th node of the tape.
func leaf(start, end, at int, typ Type, esc bool) node {
	return node{start: uint32(start), end: uint32(end), next: uint32(at + 1), typ: typ, esc: esc}
}

// container is the type of the container that c opens.
func container(c byte) Type {
	if c == '{' {
		return Object
	}
	return Array
}

// closeAt closes the innermost open container at its closing bracket,
// b[i], and returns the stack without it.
func closeAt(nodes []node, stack []uint32, i int) []uint32 {
	top := stack[len(stack)-1]
	nodes[top].end = uint32(i + 1)
	nodes[top].next = uint32(len(nodes))
	return stack[:len(stack)-1]
}

// Check verifies that b holds exactly one RFC 8259 JSON value nested at
// most maxDepth deep: the checking half of Parse, for callers that need no
// nodes. It returns the first syntax error and, separately, the first
// number that is not lossless. UTF-8 is the caller's to check.
func Check(b []byte, maxDepth int) (syntax, lossless *Error) {
	t := Get()
	defer Put(t)
	return t.Parse(b, maxDepth, false)
}
