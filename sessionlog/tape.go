package sessionlog

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// A tape is one row parsed in a single pass: the pass that checks the row
// is strict RFC 8259 JSON (checkJSON's rules) also records every value as a
// node, in document order, so that the decoder's lookups walk the nodes
// instead of scanning the row's bytes again.
//
// An object's node is followed by its members, each a key node (a string)
// then the value's nodes; an array's node by its elements' nodes. Every
// node knows where the nodes of the value after it start (next), so a
// lookup steps from member to member without looking inside them.
//
// Nodes hold offsets into the row, never copies: strings read through a
// tape share the row's memory, which is safe because Row.Bytes are never
// modified after decoding. The tape itself is scratch: it is reused for the
// next row, so nothing may keep a node or a jv past the decoding of its row.
type tape struct {
	s     string // the row, viewed as a string
	nodes []tnode
	stack []uint32 // the open containers' nodes while parsing
	// ints is the decoder's scratch for the integers of an array it reads
	// whole (the dt values of a packed row or a stream record), kept with
	// the tape so that it is pooled with it.
	ints []int64
}

// tnode is one JSON value of a row (or an object member's key).
type tnode struct {
	// start and end delimit the value in the row: for a string the text
	// between its quotes, for anything else the whole value.
	start, end uint32
	// next is the index of the first node after this value (after all of
	// a container's contents).
	next uint32
	typ  jtype
	// esc: a string with backslash escapes (its text must be unescaped);
	// on a number, a plain integer of at most 18 digits (jv.Int64 reads
	// its digits without checking them again).
	esc bool
}

// maxTapeRow is the longest row a tape can index (node offsets are 32
// bits). Limits above it are lowered to it (NewRowDecoder); a row that
// long would need tens of gigabytes of memory to decode anyway.
const maxTapeRow = math.MaxUint32 - 1

// maxTapeRowBytes is maxTapeRow as a variable, so that lowering an int to
// it compiles where int has 32 bits (there it never applies).
var maxTapeRowBytes uint64 = maxTapeRow

// maxPooledNodes bounds the tapes kept for reuse: one grown by a huge row
// is left to the garbage collector.
const maxPooledNodes = 1 << 16

var tapePool = sync.Pool{New: func() any { return new(tape) }}

func getTape() *tape { return tapePool.Get().(*tape) }

func putTape(t *tape) {
	t.s = ""
	if cap(t.nodes) > maxPooledNodes {
		t.nodes = nil
	}
	if cap(t.stack) > maxParserDepth {
		t.stack = nil
	}
	if cap(t.ints) > maxPooledNodes {
		t.ints = nil
	}
	tapePool.Put(t)
}

// root is the row's top-level value; parse must have succeeded.
func (t *tape) root() jv { return jv{t: t} }

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// parse checks that b holds exactly one RFC 8259 JSON value nested at most
// maxDepth deep and records it on the tape, in one pass without recursion.
//
// With checkUTF8, the non-ASCII bytes of strings must be UTF-8 (an issue
// with code CodeUTF8Invalid otherwise); since JSON has non-ASCII bytes
// nowhere else, a row that parses is then valid UTF-8. A row that does not
// parse may still hold bad UTF-8 after the issue: callers that report
// UTF-8 first check the row with utf8.Valid when parse fails. Without
// checkUTF8, any byte ≥ 0x80 in a string is taken as it is.
//
// It returns the first syntax issue (fatal for the row) and, separately,
// the first lossless issue (a violation only): exactly what the plain
// checker this pass replaced returned, offsets and messages included. The
// nodes are meaningful only when syntax is nil. len(b) must not exceed
// maxTapeRow.
func (t *tape) parse(b []byte, maxDepth int, checkUTF8 bool) (syntax, lossless *jsonIssue) {
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
		syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: "empty row"}
		goto done
	}

value:
	if i < n && b[i] <= ' ' {
		i = skipSpace(b, i)
	}
	if i >= n {
		syntax = &jsonIssue{code: CodeJSONInvalid, offset: n, msg: "unexpected end of row, a value is missing"}
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
				syntax = &jsonIssue{code: stringIssueCode(msg), offset: off, msg: msg}
				goto done
			}
		}
		nodes = append(nodes, tnode{start: uint32(i + 1), end: uint32(end), next: uint32(len(nodes) + 1), typ: tString, esc: esc})
		i = end + 1
	case c == '{' || c == '[':
		if len(stack) >= maxDepth {
			syntax = &jsonIssue{code: CodeJSONTooDeep, offset: i,
				msg: fmt.Sprintf("JSON nesting deeper than %d levels", maxDepth)}
			goto done
		}
		stack = append(stack, uint32(len(nodes)))
		if c == '{' {
			nodes = append(nodes, tnode{start: uint32(i), typ: tObject})
		} else {
			nodes = append(nodes, tnode{start: uint32(i), typ: tArray})
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
			syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: msg}
			goto done
		}
		// Integers of up to 15 characters other than -0 are always lossless.
		if lossless == nil && (!isInt || i-start >= 16 || i-start == 2 && c == '-' && b[start+1] == '0') {
			if m := numberLossless(b[start:i], isInt); m != "" {
				lossless = &jsonIssue{code: CodeNotLossless, offset: start, msg: m}
			}
		}
		nodes = append(nodes, tnode{start: uint32(start), end: uint32(i), next: uint32(len(nodes) + 1), typ: tNumber, esc: plain})
	case c == 't' && hasLit(b, i, "true"):
		nodes = append(nodes, tnode{start: uint32(i), end: uint32(i + 4), next: uint32(len(nodes) + 1), typ: tTrue})
		i += 4
	case c == 'f' && hasLit(b, i, "false"):
		nodes = append(nodes, tnode{start: uint32(i), end: uint32(i + 5), next: uint32(len(nodes) + 1), typ: tFalse})
		i += 5
	case c == 'n' && hasLit(b, i, "null"):
		nodes = append(nodes, tnode{start: uint32(i), end: uint32(i + 4), next: uint32(len(nodes) + 1), typ: tNull})
		i += 4
	case c == 't' || c == 'f' || c == 'n':
		syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: "invalid literal"}
		goto done
	default:
		syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: fmt.Sprintf("unexpected character %q", c)}
		goto done
	}

after:
	if i < n && b[i] <= ' ' {
		i = skipSpace(b, i)
	}
	if len(stack) == 0 {
		if i != n {
			syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: "unexpected data after the JSON value"}
		}
		goto done
	}
	if i >= n {
		syntax = &jsonIssue{code: CodeJSONInvalid, offset: n, msg: "unexpected end of row inside a container"}
		goto done
	}
	top = stack[len(stack)-1]
	switch c = b[i]; {
	case c == ',':
		i++
		if nodes[top].typ == tArray {
			goto value
		}
		if i < n && b[i] <= ' ' {
			i = skipSpace(b, i)
		}
		goto key
	case c == '}' && nodes[top].typ == tObject, c == ']' && nodes[top].typ == tArray:
		stack = stack[:len(stack)-1]
		nodes[top].end = uint32(i + 1)
		nodes[top].next = uint32(len(nodes))
		i++
		goto after
	}
	syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: fmt.Sprintf("unexpected character %q after a value", c)}
	goto done

key: // at an object key, whitespace before it skipped
	if i >= n || b[i] != '"' {
		syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: "object key expected"}
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
			syntax = &jsonIssue{code: stringIssueCode(msg), offset: off, msg: msg}
			goto done
		}
	}
	nodes = append(nodes, tnode{start: uint32(i + 1), end: uint32(end), next: uint32(len(nodes) + 1), typ: tString, esc: esc})
	i = end + 1
	if i < n && b[i] <= ' ' {
		i = skipSpace(b, i)
	}
	if i >= n || b[i] != ':' {
		syntax = &jsonIssue{code: CodeJSONInvalid, offset: i, msg: "':' expected after an object key"}
		goto done
	}
	i++
	goto value

done:
	t.nodes, t.stack = nodes, stack
	if syntax != nil && syntax.code == CodeJSONInvalid {
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

// msgBadUTF8 is scanString's message for a byte sequence that is no UTF-8.
const msgBadUTF8 = "invalid UTF-8 in string"

func stringIssueCode(msg string) string {
	if msg == msgBadUTF8 {
		return CodeUTF8Invalid
	}
	return CodeJSONInvalid
}

// plainString returns the index of the first byte from j on that ends a
// run of plain ASCII string text: '"', '\', a control character or a byte
// ≥ 0x80 (len(b) if none does).
//
// It looks at eight bytes at a time. With x the eight bytes and k a byte
// value repeated, (y - 0x01…) &^ y & 0x80… for y = x ^ k flags the bytes
// equal to k, (x - 0x20…) &^ x & 0x80… those below 0x20, and x & 0x80…
// those ≥ 0x80. A flag can be spurious only above a real one (a borrow
// runs upwards), so the lowest flag is the first byte that ends the run.
func plainString(b []byte, j int) int {
	for j+8 <= len(b) {
		if m := stops(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(b) && b[j] != '"' && b[j] != '\\' && b[j]-0x20 < 0x80-0x20 {
		j++
	}
	return j
}

// nonDigits flags (bit 7 of each byte) the bytes of x that are no ASCII
// digit: below '0' (x - 0x30… borrows), above '9' (x + 0x46… carries into
// bit 7) or ≥ 0x80. As in stops, a flag can be spurious only above a real
// one, so the lowest flag is the first byte that is no digit.
func nonDigits(x uint64) uint64 {
	return ((x - lo8*'0') | (x + lo8*(0x80-'9'-1)) | x) & hi8
}

// stops flags (bit 7 of each byte) the bytes of x that end a run of plain
// string text, as plainString describes.
func stops(x uint64) uint64 {
	q := x ^ (lo8 * '"')
	s := x ^ (lo8 * '\\')
	return ((q-lo8)&^q | (s-lo8)&^s | (x-lo8*0x20)&^x | x) & hi8
}

// scanString reads the string whose opening quote is b[i], from b[j] on
// (the bytes before j are plain text), and returns the index of its
// closing quote and whether it holds escapes; or, when it is malformed, a
// message and the offset to report. With checkUTF8, non-ASCII bytes must
// be UTF-8 (msgBadUTF8 at the first that is not).
func scanString(b []byte, i, j int, checkUTF8 bool) (end int, esc bool, msg string, off int) {
	for {
		if j >= len(b) {
			return 0, false, "unterminated string", len(b)
		}
		switch b[j] {
		case '"':
			return j, esc, "", 0
		case '\\':
			esc = true
			if j+1 >= len(b) {
				return 0, false, "unterminated escape", i
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return 0, false, "short \\u escape", i
				}
				for _, h := range b[j+2 : j+6] {
					if !isHex(h) {
						return 0, false, "invalid \\u escape", j
					}
				}
				j += 6
			default:
				return 0, false, fmt.Sprintf("invalid escape \\%c", b[j+1]), j
			}
		default:
			if b[j] < 0x20 {
				return 0, false, "control character in string", j
			}
			if !checkUTF8 {
				j++
				break
			}
			// A run of non-ASCII text, checked whole: an ASCII byte is no
			// part of a multi-byte sequence, so the run is valid UTF-8
			// exactly when its runes are. Only a bad run is walked rune by
			// rune, for the offset of its first bad byte.
			k := j + 1
			for k < len(b) && b[k] >= 0x80 {
				k++
			}
			if !utf8.Valid(b[j:k]) {
				for {
					r, size := utf8.DecodeRune(b[j:])
					if r == utf8.RuneError && size == 1 {
						return 0, false, msgBadUTF8, j
					}
					j += size
				}
			}
			j = k
		}
		j = plainString(b, j)
	}
}
