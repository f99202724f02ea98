package replay

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// A page parses the content of every message it shows and the data of
// every event it notes, and a long session has hundreds of thousands.
// Almost all of it is plain JSON with the keys the page reads, which this
// scanner reads in one pass without reflection. It reads exactly what
// encoding/json would — or gives up, and the page asks encoding/json: on a
// key that matches a field only in another case, a value of another type
// than the field's, a key given twice where encoding/json would merge the
// two, a string that is not valid UTF-8 or holds an escaped surrogate,
// nesting deeper than maxScanDepth, or anything that is not JSON.
// FuzzParts holds the two readers equal.

// maxScanDepth is the deepest nesting the scanner reads (encoding/json's
// limit is far beyond what content holds).
const maxScanDepth = 200

// scanner reads one JSON text; ok turns false for good once it gives up.
type scanner struct {
	s     string
	i     int
	depth int
	ok    bool
}

func newScanner(s string) *scanner { return &scanner{s: s, ok: true} }

// fail gives up.
func (sc *scanner) fail() bool {
	sc.ok = false
	return false
}

func (sc *scanner) ws() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// peek is the next byte after whitespace, 0 at the end.
func (sc *scanner) peek() byte {
	sc.ws()
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

// eat consumes c, after whitespace, when it is next.
func (sc *scanner) eat(c byte) bool {
	if sc.peek() == c {
		sc.i++
		return true
	}
	return false
}

// end reports whether nothing but whitespace is left.
func (sc *scanner) end() bool {
	sc.ws()
	return sc.ok && sc.i == len(sc.s)
}

// each reads a container (an array: key is ""), calling item after each
// key; item reads the value. It reports whether the container was read.
func (sc *scanner) each(open, close byte, item func(key string) bool) bool {
	if !sc.eat(open) {
		return sc.fail()
	}
	if sc.depth++; sc.depth > maxScanDepth {
		return sc.fail()
	}
	defer func() { sc.depth-- }()
	if sc.eat(close) {
		return true
	}
	for {
		key := ""
		if open == '{' {
			var ok bool
			if key, ok = sc.str(); !ok || !sc.eat(':') {
				return sc.fail()
			}
		}
		sc.ws()
		if !item(key) || !sc.ok {
			return sc.fail()
		}
		if sc.eat(close) {
			return true
		}
		if !sc.eat(',') {
			return sc.fail()
		}
	}
}

// skip reads any value and returns its text.
func (sc *scanner) skip() (string, bool) {
	sc.ws()
	start := sc.i
	var ok bool
	switch sc.peek() {
	case '{':
		ok = sc.each('{', '}', func(string) bool { _, ok := sc.skip(); return ok })
	case '[':
		ok = sc.each('[', ']', func(string) bool { _, ok := sc.skip(); return ok })
	case '"':
		ok = sc.skipString()
	case 't':
		ok = sc.literal("true")
	case 'f':
		ok = sc.literal("false")
	case 'n':
		ok = sc.literal("null")
	default:
		ok = sc.number()
	}
	if !ok {
		return "", sc.fail()
	}
	return sc.s[start:sc.i], true
}

func (sc *scanner) literal(word string) bool {
	sc.ws()
	if !strings.HasPrefix(sc.s[sc.i:], word) {
		return sc.fail()
	}
	sc.i += len(word)
	return true
}

// number reads a number as JSON writes it.
func (sc *scanner) number() bool {
	s, i := sc.s, sc.i
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return sc.fail()
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return sc.fail()
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return sc.fail()
		}
	}
	sc.i = i
	return true
}

// skipString reads a string without decoding it.
func (sc *scanner) skipString() bool {
	s, i := sc.s, sc.i+1
	for i < len(s) {
		switch c := s[i]; {
		case c == '"':
			sc.i = i + 1
			return true
		case c == '\\':
			if i+1 >= len(s) {
				return sc.fail()
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(s, i+2); !ok {
					return sc.fail()
				}
				i += 6
			default:
				return sc.fail()
			}
		case c < 0x20:
			return sc.fail()
		default:
			i++
		}
	}
	return sc.fail()
}

// str reads a string and decodes it. A string without escapes is a slice
// of the text, not a copy.
func (sc *scanner) str() (string, bool) {
	if sc.peek() != '"' {
		return "", sc.fail()
	}
	start := sc.i
	if !sc.skipString() {
		return "", false
	}
	body := sc.s[start+1 : sc.i-1]
	if !utf8.ValidString(body) {
		return "", sc.fail()
	}
	if strings.IndexByte(body, '\\') < 0 {
		return body, true
	}
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		switch e := body[i+1]; e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, _ := hex4(body, i+2)
			if r >= 0xD800 && r < 0xE000 {
				return "", sc.fail() // a surrogate: encoding/json pairs or replaces it
			}
			b.WriteRune(r)
			i += 4
		default: // " \ /
			b.WriteByte(e)
		}
		i += 2
	}
	return b.String(), true
}

// hex4 reads the four hex digits of a \u escape at s[i:].
func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// strField reads a string field's value: a string, or null, which leaves
// the field as it was (as encoding/json does); anything else gives up.
func (sc *scanner) strField(dst *string) bool {
	switch sc.peek() {
	case '"':
		s, ok := sc.str()
		*dst = s
		return ok
	case 'n':
		return sc.literal("null")
	}
	return sc.fail()
}

// foreign reports whether key is none of names but encoding/json could
// match it to one (it matches keys to fields regardless of case): the
// scanner gives up on such a key.
func foreign(key string, names ...string) bool {
	for _, n := range names {
		if key == n {
			return false
		}
	}
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return true // a Unicode fold (K, ſ) could match
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// blockKeys are the keys of a content block the page reads (rawBlock).
var blockKeys = []string{"type", "text", "id", "name", "arguments", "input", "toolCallId", "isError", "content", "toolName", "mimeType"}

// scanParts reads content as Parts does, when it is an array of blocks
// the scanner reads; ok is false when it leaves the content to Parts.
func scanParts(content string) (parts []Part, ok bool) {
	sc := newScanner(content)
	parts = []Part{}
	sc.each('[', ']', func(string) bool {
		p, ok := sc.part()
		parts = append(parts, p)
		return ok
	})
	if !sc.end() {
		return nil, false
	}
	return parts, true
}

// part reads one block of an array: an object, or a string (a text
// block); anything else gives up.
func (sc *scanner) part() (Part, bool) {
	switch sc.peek() {
	case '"':
		s, ok := sc.str()
		return Part{Type: "text", Text: s}, ok
	case '{':
	default:
		return Part{}, sc.fail()
	}
	start := sc.i
	var b rawBlock
	if !sc.each('{', '}', func(key string) bool { return sc.field(&b, key) }) {
		return Part{}, false
	}
	return b.part(sc.s[start:sc.i]), true
}

// field reads the value of a block's key into b (rawBlock's fields); a key
// of no field is skipped.
func (sc *scanner) field(b *rawBlock, key string) bool {
	switch key {
	case "type":
		return sc.strField(&b.Type)
	case "text":
		return sc.strField(&b.Text)
	case "id":
		return sc.strField(&b.ID)
	case "name":
		return sc.strField(&b.Name)
	case "toolCallId":
		return sc.strField(&b.ToolCallID)
	case "toolName":
		return sc.strField(&b.ToolName)
	case "mimeType":
		return sc.strField(&b.MimeType)
	case "isError":
		return sc.boolField(&b.IsError)
	case "arguments":
		return sc.rawField(&b.Arguments)
	case "input":
		return sc.rawField(&b.Input)
	case "content":
		return sc.rawField(&b.Content)
	}
	if foreign(key, blockKeys...) {
		return sc.fail()
	}
	_, ok := sc.skip()
	return ok
}

// boolField reads a bool field's value; anything else (a null among them,
// rare) gives up.
func (sc *scanner) boolField(dst *bool) bool {
	switch sc.peek() {
	case 't':
		*dst = true
		return sc.literal("true")
	case 'f':
		*dst = false
		return sc.literal("false")
	}
	return sc.fail()
}

// rawField reads a value kept as written.
func (sc *scanner) rawField(dst *rawText) bool {
	v, ok := sc.skip()
	*dst = rawText(v)
	return ok
}

// lightExcerpt reads content as Excerpt's first look does: the first
// block with text, or tool result starting with text, provided every
// block reads as such a block would; matched is false when none has, ok
// false when the scanner leaves the content to encoding/json.
func lightExcerpt(content string) (text string, matched, ok bool) {
	sc := newScanner(content)
	if sc.peek() == 'n' {
		return "", false, sc.literal("null") && sc.end()
	}
	sc.each('[', ']', func(string) bool {
		if sc.peek() == 'n' {
			return sc.literal("null")
		}
		var typ, txt, first, firstText string
		var inner, hasContent bool
		if !sc.each('{', '}', func(key string) bool {
			switch key {
			case "type":
				return sc.strField(&typ)
			case "text":
				return sc.strField(&txt)
			case "content":
				if hasContent {
					return sc.fail() // encoding/json would merge the two lists
				}
				hasContent = true
				return sc.lightContent(&inner, &first, &firstText)
			}
			if foreign(key, "type", "text", "content") {
				return sc.fail()
			}
			_, ok := sc.skip()
			return ok
		}) {
			return false
		}
		switch {
		case matched:
		case typ == "text" && strings.TrimSpace(txt) != "":
			text, matched = txt, true
		case typ == "tool-result" && inner && first == "text":
			text, matched = firstText, true
		}
		return true
	})
	if !sc.end() {
		return "", false, false
	}
	return text, matched, true
}

// lightContent reads a block's content as a list of blocks' types and
// texts: inner is whether it has any, first and text the first's.
func (sc *scanner) lightContent(inner *bool, first, text *string) bool {
	if sc.peek() == 'n' {
		return sc.literal("null")
	}
	return sc.each('[', ']', func(string) bool {
		if sc.peek() == 'n' {
			return sc.fail() // a null block: left to encoding/json
		}
		var typ, txt string
		ok := sc.each('{', '}', func(key string) bool {
			switch key {
			case "type":
				return sc.strField(&typ)
			case "text":
				return sc.strField(&txt)
			}
			if foreign(key, "type", "text") {
				return sc.fail()
			}
			_, ok := sc.skip()
			return ok
		})
		if !*inner {
			*inner, *first, *text = true, typ, txt
		}
		return ok
	})
}

// scanData reads an event's data object as eventData does (a value with
// anything after it, as a json.Decoder reads its first value); ok is false
// when the scanner leaves it to encoding/json.
func scanData(envelope string) (d data, ok bool) {
	sc := newScanner(envelope)
	seen := false
	sc.each('{', '}', func(key string) bool {
		if key != "data" {
			if foreign(key, "data") {
				return sc.fail()
			}
			_, ok := sc.skip()
			return ok
		}
		if seen {
			return sc.fail() // encoding/json would merge the two objects
		}
		seen = true
		if sc.peek() == 'n' {
			return sc.literal("null")
		}
		if sc.peek() != '{' {
			return sc.fail()
		}
		v, ok := sc.value()
		d, _ = v.(map[string]any)
		return ok
	})
	return d, sc.ok
}

// value reads any value as encoding/json decodes it into an interface
// (numbers as json.Number). Its strings are copies, as encoding/json's
// are: a note keeps some, and a view would keep the whole event.
func (sc *scanner) value() (any, bool) {
	switch sc.peek() {
	case '{':
		m := map[string]any{}
		ok := sc.each('{', '}', func(key string) bool {
			v, ok := sc.value()
			m[strings.Clone(key)] = v
			return ok
		})
		return m, ok
	case '[':
		l := []any{}
		ok := sc.each('[', ']', func(string) bool {
			v, ok := sc.value()
			l = append(l, v)
			return ok
		})
		return l, ok
	case '"':
		v, ok := sc.str()
		return strings.Clone(v), ok
	case 't':
		return true, sc.literal("true")
	case 'f':
		return false, sc.literal("false")
	case 'n':
		return nil, sc.literal("null")
	}
	start := sc.i
	if !sc.number() {
		return nil, false
	}
	return json.Number(sc.s[start:sc.i]), true
}
