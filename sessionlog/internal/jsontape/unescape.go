package jsontape

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

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
