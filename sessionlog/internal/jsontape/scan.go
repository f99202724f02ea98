package jsontape

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// The scanners of strings and numbers. The plain runs of a string and the
// digits of a number are found eight bytes at a time: with x the eight
// bytes little-endian and k a byte value repeated, a flag in bit 7 of a
// byte marks a byte that ends the run.

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

// skipSpaceAt is skipSpace without a call when b[i] is no whitespace, as
// it is most often.
func skipSpaceAt(b []byte, i int) int {
	if i < len(b) && b[i] <= ' ' {
		return skipSpace(b, i)
	}
	return i
}

// digitsEnd is the index of the first byte from j on that is no ASCII
// digit (len(b) if none): eight bytes at a time (a timestamp has 13
// digits), then one.
func digitsEnd(b []byte, j int) int {
	for j+8 <= len(b) {
		if m := nonDigits(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
		j += 8
	}
	for j < len(b) && b[j]-'0' < 10 {
		j++
	}
	return j
}

func hasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
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

// msgBadUTF8 is scanString's message for a byte sequence that is no UTF-8.
const msgBadUTF8 = "invalid UTF-8 in string"

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
		switch c := b[j]; {
		case c == '"':
			return j, esc, "", 0
		case c == '\\':
			if esc = true; j+1 < len(b) && shortEscape(b[j+1]) {
				j += 2
			} else if j, msg, off = longEscape(b, i, j); msg != "" {
				return 0, false, msg, off
			}
		case c < 0x20:
			return 0, false, "control character in string", j
		case checkUTF8: // c ≥ 0x80
			if j, off = scanUTF8(b, j); off >= 0 {
				return 0, false, msgBadUTF8, off
			}
		default:
			j++
		}
		j = plainString(b, j)
	}
}

// shortEscape reports whether a backslash and c are a whole escape.
func shortEscape(c byte) bool {
	switch c {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	}
	return false
}

// longEscape reads the escape at b[j], a backslash, of the string whose
// opening quote is b[i] when it is no short escape: a \\u escape, whose
// index after it is returned, or a message and its offset.
func longEscape(b []byte, i, j int) (next int, msg string, off int) {
	switch {
	case j+1 >= len(b):
		return 0, "unterminated escape", i
	case b[j+1] != 'u':
		return 0, fmt.Sprintf("invalid escape \\%c", b[j+1]), j
	case j+6 > len(b):
		return 0, "short \\u escape", i
	}
	for _, h := range b[j+2 : j+6] {
		if !isHex(h) {
			return 0, "invalid \\u escape", j
		}
	}
	return j + 6, "", 0
}

// scanUTF8 checks the run of non-ASCII bytes at b[j]: the index after it,
// and the offset of its first byte that is no UTF-8 (-1 when it is all
// UTF-8). An ASCII byte is no part of a multi-byte sequence, so the run is
// valid exactly when its runes are; only a bad run is walked rune by rune.
func scanUTF8(b []byte, j int) (next, bad int) {
	k := j + 1
	for k < len(b) && b[k] >= 0x80 {
		k++
	}
	if utf8.Valid(b[j:k]) {
		return k, -1
	}
	for {
		r, size := utf8.DecodeRune(b[j:])
		if r == utf8.RuneError && size == 1 {
			return 0, j
		}
		j += size
	}
}

// scanNumber reads the JSON number at b[i]: the index after it and
// whether it has neither a fraction nor an exponent; or, when it is
// malformed, a message and its offset (end).
func scanNumber(b []byte, i int) (end int, isInt bool, msg string) {
	j := i
	if b[j] == '-' {
		j++
	}
	switch {
	case j >= len(b) || b[j]-'0' >= 10:
		return j, false, "invalid number"
	case b[j] == '0':
		j++
	default:
		j = digitsEnd(b, j)
	}
	isInt = true
	if j < len(b) && b[j] == '.' {
		isInt = false
		if k := digitsEnd(b, j+1); k == j+1 {
			return k, false, "invalid number: digits expected after '.'"
		} else {
			j = k
		}
	}
	if j < len(b) && b[j]|0x20 == 'e' {
		isInt = false
		if j++; j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if k := digitsEnd(b, j); k == j {
			return k, false, "invalid number: digits expected in exponent"
		} else {
			j = k
		}
	}
	return j, isInt, ""
}
