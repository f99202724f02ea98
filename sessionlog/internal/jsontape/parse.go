package jsontape

import (
	"encoding/binary"
	"fmt"
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
func (t *Tape) Parse(b []byte, maxDepth int, checkUTF8 bool) (syntax, lossless *Error) {
	t.s = unsafe.String(unsafe.SliceData(b), len(b))
	nodes := t.nodes[:0]
	stack := t.stack[:0]
	n := len(b)
	var (
		c     byte
		end   int
		esc   bool
		off   int
		msg   string
		start int
		isInt bool
		plain bool // a number read by the integer fast path, at most 18 digits
		top   uint32
	)
	i := skipSpace(b, 0)
	if i >= n {
		syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: "empty row"}
		goto done
	}

value:
	if i < n && b[i] <= ' ' {
		i = skipSpace(b, i)
	}
	if i >= n {
		syntax = &Error{Kind: InvalidJSON, Offset: n, Msg: "unexpected end of row, a value is missing"}
		goto done
	}
	c = b[i]
	switch {
	case c == '"':
		// plainString's first eight bytes inline (most keys and many values
		// end there), the call only for longer strings; the same for keys.
		if esc = false; i+9 <= n {
			if m := stops(binary.LittleEndian.Uint64(b[i+1:])); m != 0 {
				end = i + 1 + bits.TrailingZeros64(m)>>3
			} else {
				end = plainString(b, i+9)
			}
		} else {
			end = plainString(b, i+1)
		}
		if end >= n || b[end] != '"' {
			end, esc, msg, off = scanString(b, i, end, checkUTF8)
			if msg != "" {
				syntax = &Error{Kind: stringErrorKind(msg), Offset: off, Msg: msg}
				goto done
			}
		}
		nodes = append(nodes, node{start: uint32(i + 1), end: uint32(end), next: uint32(len(nodes) + 1), typ: String, esc: esc})
		i = end + 1
	case c == '{' || c == '[':
		if len(stack) >= maxDepth {
			syntax = &Error{Kind: TooDeep, Offset: i,
				Msg: fmt.Sprintf("JSON nesting deeper than %d levels", maxDepth)}
			goto done
		}
		stack = append(stack, uint32(len(nodes)))
		if c == '{' {
			nodes = append(nodes, node{start: uint32(i), typ: Object})
		} else {
			nodes = append(nodes, node{start: uint32(i), typ: Array})
		}
		i++
		if i < n && b[i] <= ' ' {
			i = skipSpace(b, i)
		}
		if i < n && b[i] == c+2 { // '{'+2 is '}', '['+2 is ']'
			top = stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			nodes[top].end = uint32(i + 1)
			nodes[top].next = uint32(len(nodes))
			i++
			goto after
		}
		if c == '[' {
			goto value
		}
		goto key
	case c == '-' || c >= '0' && c <= '9':
		start = i
		// A plain integer is read here; anything else by scanNumber.
		end = i
		if c == '-' {
			end++
		}
		off = end // the first digit
		// Eight bytes at a time (a timestamp has 13 digits), then one.
		for end+8 <= n {
			if m := nonDigits(binary.LittleEndian.Uint64(b[end:])); m != 0 {
				end += bits.TrailingZeros64(m) >> 3
				goto digitsDone
			}
			end += 8
		}
		for end < n && b[end]-'0' < 10 {
			end++
		}
	digitsDone:
		plain = false
		if end > off && (b[off] != '0' || end == off+1) && (end >= n || b[end] != '.' && b[end]|0x20 != 'e') {
			i, isInt, plain = end, true, end-off <= 18
		} else if i, isInt, msg = scanNumberFrom(b, i); msg != "" {
			syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: msg}
			goto done
		}
		// Integers of up to 15 characters other than -0 are always lossless.
		if lossless == nil && (!isInt || i-start >= 16 || i-start == 2 && c == '-' && b[start+1] == '0') {
			if m := numberLossless(b[start:i], isInt); m != "" {
				lossless = &Error{Kind: NotLossless, Offset: start, Msg: m}
			}
		}
		nodes = append(nodes, node{start: uint32(start), end: uint32(i), next: uint32(len(nodes) + 1), typ: Number, esc: plain})
	case c == 't' && hasLit(b, i, "true"):
		nodes = append(nodes, node{start: uint32(i), end: uint32(i + 4), next: uint32(len(nodes) + 1), typ: True})
		i += 4
	case c == 'f' && hasLit(b, i, "false"):
		nodes = append(nodes, node{start: uint32(i), end: uint32(i + 5), next: uint32(len(nodes) + 1), typ: False})
		i += 5
	case c == 'n' && hasLit(b, i, "null"):
		nodes = append(nodes, node{start: uint32(i), end: uint32(i + 4), next: uint32(len(nodes) + 1), typ: Null})
		i += 4
	case c == 't' || c == 'f' || c == 'n':
		syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: "invalid literal"}
		goto done
	default:
		syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: fmt.Sprintf("unexpected character %q", c)}
		goto done
	}

after:
	if i < n && b[i] <= ' ' {
		i = skipSpace(b, i)
	}
	if len(stack) == 0 {
		if i != n {
			syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: "unexpected data after the JSON value"}
		}
		goto done
	}
	if i >= n {
		syntax = &Error{Kind: InvalidJSON, Offset: n, Msg: "unexpected end of row inside a container"}
		goto done
	}
	top = stack[len(stack)-1]
	switch c = b[i]; {
	case c == ',':
		i++
		if nodes[top].typ == Array {
			goto value
		}
		if i < n && b[i] <= ' ' {
			i = skipSpace(b, i)
		}
		goto key
	case c == '}' && nodes[top].typ == Object, c == ']' && nodes[top].typ == Array:
		stack = stack[:len(stack)-1]
		nodes[top].end = uint32(i + 1)
		nodes[top].next = uint32(len(nodes))
		i++
		goto after
	}
	syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: fmt.Sprintf("unexpected character %q after a value", c)}
	goto done

key: // at an object key, whitespace before it skipped
	if i >= n || b[i] != '"' {
		syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: "object key expected"}
		goto done
	}
	if esc = false; i+9 <= n {
		if m := stops(binary.LittleEndian.Uint64(b[i+1:])); m != 0 {
			end = i + 1 + bits.TrailingZeros64(m)>>3
		} else {
			end = plainString(b, i+9)
		}
	} else {
		end = plainString(b, i+1)
	}
	if end >= n || b[end] != '"' {
		end, esc, msg, off = scanString(b, i, end, checkUTF8)
		if msg != "" {
			syntax = &Error{Kind: stringErrorKind(msg), Offset: off, Msg: msg}
			goto done
		}
	}
	nodes = append(nodes, node{start: uint32(i + 1), end: uint32(end), next: uint32(len(nodes) + 1), typ: String, esc: esc})
	i = end + 1
	if i < n && b[i] <= ' ' {
		i = skipSpace(b, i)
	}
	if i >= n || b[i] != ':' {
		syntax = &Error{Kind: InvalidJSON, Offset: i, Msg: "':' expected after an object key"}
		goto done
	}
	i++
	goto value

done:
	t.nodes, t.stack = nodes, stack
	if syntax != nil && syntax.Kind == InvalidJSON {
		lossless = nil // a row that is not JSON has no numbers to judge
	}
	return syntax, lossless
}

// scanNumberFrom is scanNumber returning the index after the number, for
// parse: a variable whose address is taken lives in memory, and parse's
// position is its hottest variable.
func scanNumberFrom(b []byte, i int) (end int, isInt bool, err string) {
	isInt, err = scanNumber(b, &i)
	return i, isInt, err
}

func stringErrorKind(msg string) Kind {
	if msg == msgBadUTF8 {
		return InvalidUTF8
	}
	return InvalidJSON
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
