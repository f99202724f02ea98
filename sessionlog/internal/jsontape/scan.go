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

// scanNumber reads a JSON number and reports whether it has neither a
// fraction nor an exponent.
func scanNumber(b []byte, i *int) (isInt bool, err string) {
	j := *i
	if b[j] == '-' {
		j++
	}
	if j >= len(b) || b[j] < '0' || b[j] > '9' {
		*i = j
		return false, "invalid number"
	}
	if b[j] == '0' {
		j++
	} else {
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	isInt = true
	if j < len(b) && b[j] == '.' {
		isInt = false
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			*i = j
			return false, "invalid number: digits expected after '.'"
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		isInt = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			*i = j
			return false, "invalid number: digits expected in exponent"
		}
	}
	*i = j
	return isInt, ""
}
