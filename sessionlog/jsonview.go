package sessionlog

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"
)

// jv is a read-only view of one JSON value inside a row that checkJSON has
// already validated. Lookups scan the row's bytes in place (no tree is
// built); the objects the decoder reads many members of are indexed once,
// in a single pass, so their large members (message content, tool
// schemas) are skipped once rather than once per lookup.
//
// Strings read through a jv share the row's memory: Row.Bytes are never
// modified after decoding, which is what makes that safe.
type jv struct {
	r  gjson.Result
	ix *objIndex
}

// jtype is the kind of a JSON value.
type jtype int

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

// maxIndexed is how many members of an object an index holds; further
// members are found by scanning.
const maxIndexed = 32

type objIndex struct {
	n    int
	more bool
	keys [maxIndexed]string
	vals [maxIndexed]gjson.Result
}

// scratch holds the indexes of one Decode call.
type scratch struct {
	used int
	ix   [6]objIndex
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// index returns v with its members indexed, when v is an object and the
// scratch has room.
func (s *scratch) index(v jv) jv {
	if v.Type() != tObject || s.used == len(s.ix) {
		return v
	}
	ix := &s.ix[s.used]
	s.used++
	ix.n, ix.more = 0, false
	raw := v.r.Raw
	i := skipWS(raw, 1) // past '{'
	for i < len(raw) && raw[i] != '}' {
		if ix.n == maxIndexed {
			ix.more = true
			break
		}
		// The row passed checkJSON: a key string, ':', a value, then ',' or '}'.
		kEnd := skipString(raw, i)
		key := raw[i+1 : kEnd-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = gjson.Parse(raw[i:kEnd]).Str
		}
		i = skipWS(raw, kEnd) + 1 // past ':'
		i = skipWS(raw, i)
		vEnd := skipValue(raw, i)
		ix.keys[ix.n] = key
		ix.vals[ix.n] = resultOf(raw[i:vEnd])
		ix.n++
		i = skipWS(raw, vEnd)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	v.ix = ix
	return v
}

func skipWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at s[i] == '"'.
func skipString(s string, i int) int {
	i++
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		// Count the backslashes before the quote: an even number closes.
		k := i - 1
		for k >= 0 && s[k] == '\\' {
			k--
		}
		i++
		if (i-2-k)%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index just past the JSON value starting at s[i],
// which checkJSON has validated.
func skipValue(s string, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(s) {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// resultOf views one validated JSON value without parsing numbers (they are
// read from Raw when asked for) and without copying strings that have no
// escapes.
func resultOf(raw string) gjson.Result {
	switch raw[0] {
	case '"':
		if strings.IndexByte(raw, '\\') < 0 {
			return gjson.Result{Type: gjson.String, Raw: raw, Str: raw[1 : len(raw)-1]}
		}
		return gjson.Parse(raw)
	case '{', '[':
		return gjson.Result{Type: gjson.JSON, Raw: raw}
	case 't':
		return gjson.Result{Type: gjson.True, Raw: raw}
	case 'f':
		return gjson.Result{Type: gjson.False, Raw: raw}
	case 'n':
		return gjson.Result{Type: gjson.Null, Raw: raw}
	}
	return gjson.Result{Type: gjson.Number, Raw: raw}
}

// parseRow views a validated row. The bytes must stay unmodified while the
// view and any string read through it are in use.
func parseRow(b []byte) jv {
	if len(b) == 0 {
		return jv{}
	}
	return jv{r: gjson.Parse(unsafe.String(&b[0], len(b)))}
}

// ok reports whether the value exists (fastjson's non-nil).
func (v jv) ok() bool { return v.r.Exists() }

// Type is the value's kind; a missing value is null.
func (v jv) Type() jtype {
	switch v.r.Type {
	case gjson.String:
		return tString
	case gjson.Number:
		return tNumber
	case gjson.True:
		return tTrue
	case gjson.False:
		return tFalse
	case gjson.JSON:
		if len(v.r.Raw) > 0 && v.r.Raw[0] == '[' {
			return tArray
		}
		return tObject
	}
	return tNull
}

func (v jv) get1(key string) jv {
	if v.ix != nil {
		for i := 0; i < v.ix.n; i++ {
			if v.ix.keys[i] == key {
				return jv{r: v.ix.vals[i]}
			}
		}
		if !v.ix.more {
			return jv{}
		}
	}
	if v.r.Type != gjson.JSON {
		return jv{}
	}
	raw := v.r.Raw
	if raw[0] == '[' {
		n, err := strconv.Atoi(key)
		if err != nil || n < 0 {
			return jv{}
		}
		var out jv
		k := 0
		v.eachRaw(func(el string) bool {
			if k == n {
				out = jv{r: resultOf(el)}
				return false
			}
			k++
			return true
		})
		return out
	}
	// A direct scan of the members: no path syntax to parse.
	i := skipWS(raw, 1)
	for i < len(raw) && raw[i] != '}' {
		kEnd := skipString(raw, i)
		k := raw[i+1 : kEnd-1]
		i = skipWS(raw, skipWS(raw, kEnd)+1)
		vEnd := skipValue(raw, i)
		if k == key || strings.IndexByte(k, '\\') >= 0 && gjson.Parse(raw[kEnd-len(k)-2:kEnd]).Str == key {
			return jv{r: resultOf(raw[i:vEnd])}
		}
		i = skipWS(raw, vEnd)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	return jv{}
}

// Get looks up a member path: each key names an object member, or an array
// element by its decimal index.
func (v jv) Get(keys ...string) jv {
	for _, k := range keys {
		if !v.ok() {
			return jv{}
		}
		v = v.get1(k)
	}
	return v
}

// GetStringBytes is the string at the path, or "" for anything else.
func (v jv) GetStringBytes(keys ...string) string {
	w := v.Get(keys...)
	if w.r.Type != gjson.String {
		return ""
	}
	return w.r.Str
}

// GetBool is the boolean at the path (false for anything else).
func (v jv) GetBool(keys ...string) bool {
	return v.Get(keys...).r.Type == gjson.True
}

// GetArray is the array at the path, or nil.
func (v jv) GetArray(keys ...string) []jv {
	w := v.Get(keys...)
	if w.Type() != tArray {
		return nil
	}
	var out []jv
	w.r.ForEach(func(_, el gjson.Result) bool {
		out = append(out, jv{r: el})
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
	v.r.ForEach(func(_, el gjson.Result) bool { return f(jv{r: el}) })
	return true
}

// eachRaw calls f with the JSON text of each element of an array, in
// order, until f returns false, without decoding the elements; it reports
// whether v is an array.
func (v jv) eachRaw(f func(raw string) bool) bool {
	if v.Type() != tArray {
		return false
	}
	raw := v.r.Raw
	i := skipWS(raw, 1)
	for i < len(raw) && raw[i] != ']' {
		end := skipValue(raw, i)
		if !f(raw[i:end]) {
			return true
		}
		i = skipWS(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	return true
}

// arrayLen counts an array's elements without materializing them.
func (v jv) arrayLen() int {
	n := 0
	v.eachRaw(func(string) bool { n++; return true })
	return n
}

// Array is the value's elements, or an error when it is no array.
func (v jv) Array() ([]jv, error) {
	if v.Type() != tArray {
		return nil, errNotArray
	}
	return v.GetArray(), nil
}

type jsonError string

func (e jsonError) Error() string { return string(e) }

const (
	errNotArray  jsonError = "not an array"
	errNotInt    jsonError = "not an integer"
	errNotBool   jsonError = "not a boolean"
	errNotNumber jsonError = "not a number"
)

// Int64 is the value as an exact integer; a fraction or exponent is an error.
func (v jv) Int64() (int64, error) {
	if v.r.Type != gjson.Number {
		return 0, errNotNumber
	}
	n, err := strconv.ParseInt(v.r.Raw, 10, 64)
	if err != nil {
		return 0, errNotInt
	}
	return n, nil
}

// Int is Int64 as an int.
func (v jv) Int() (int, error) {
	n, err := v.Int64()
	return int(n), err
}

// Bool is the value as a boolean.
func (v jv) Bool() (bool, error) {
	switch v.r.Type {
	case gjson.True:
		return true, nil
	case gjson.False:
		return false, nil
	}
	return false, errNotBool
}

// MarshalTo appends the value's JSON text, exactly as in the row.
func (v jv) MarshalTo(dst []byte) []byte { return append(dst, v.r.Raw...) }

// object is an object value's members.
type object struct{ v jv }

// GetObject views the value as an object.
func (v jv) GetObject() object { return object{v} }

// Visit calls f for each member in order.
func (o object) Visit(f func(k string, v jv)) {
	if o.v.Type() != tObject {
		return
	}
	o.v.r.ForEach(func(k, val gjson.Result) bool {
		f(k.Str, jv{r: val})
		return true
	})
}

// Len is the number of members.
func (o object) Len() int {
	n := 0
	o.Visit(func(string, jv) { n++ })
	return n
}
