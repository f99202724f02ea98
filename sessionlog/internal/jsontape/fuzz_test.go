package jsontape

import (
	"bytes"
	"encoding/json"
	"io"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// maxDepth is the depth the fuzzed rows are held to: the codec's default.
const maxDepth = 128

// fuzzSeedRows are hand-written rows (values invented): JSON of the shapes
// session logs hold, and the broken shapes a parser must survive. The
// corpus adds real rows at run time.
var fuzzSeedRows = []string{
	`{"type":"session","version":4,"id":"s4","createdAt":1788699455000,"cwd":"/w","isSeeded":false,"delegationDepth":0}`,
	`{"type":"text-chunks","seq0":4,"time0":1783352051618,"data":{"turn":1,"step":1,"index":0,"dt":[0,26,-3],"texts":["The"," user"," wants"," X"]}}`,
	`{"type":"tool/call","seq":14,"time":1783352051802,"data":{"turn":1,"step":1,"callId":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}}`,
	`{"type":"user/message","seq":20,"time":1,"data":{"message":{"id":"m","role":"user","content":[]}},"surfaceOp":"append","sourceEventSeqs":[4,[9,12],20,21]}`,
	`{"type":"plugin:acme/trace.v1","seq":5,"time":1,"data":{"x":[1,2.5,{"y":null}]},"ignorable":true}`,
	`{"method":"session.event","params":{"sessionId":"s1","event":{"type":"turn/start","seq":3,"time":0,"data":{"turn":1}}}}`,
	``,
	` `,
	`[]`,
	`"row"`,
	`{}`,
	`{"type":"turn/start","seq":1.5,"time":1e3,"data":{}}`,
	`{"type":"turn/start","seq":0,"time":-0,"data":{"turn":1}}`,
	`{"type":"turn/start","seq":0,"time":9007199254740993,"data":{"turn":1}}`,
	`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1e400}}`,
	`{"type":"turn/start","seq":0,"time":1,"data":{"turn":-0.0}}`,
	`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}`,
	`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}`,
	`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}} {}`,
	`{"type":"x\u12","seq":0}`,
	`{"type":"x\q","seq":0}`,
	"{\"type\":\"x\ty\",\"seq\":0}",
	"{\"type\":\"\xff\xfe\",\"seq\":0}",
	"{\"type\":\"\xed\xa0\x80\",\"seq\":0}",
	`{"type":"x","seq":0,"time":0,"data":{"s":"\ud800\udc00\ud800"}}`,
	`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`[01]`,
	`[1.]`,
	`[1e]`,
	`[.5]`,
	`[tru]`,
	`{"a" 1}`,
	`{,}`,
	`[1,]`,
	`{"a":1,}`,
}

// FuzzCheckJSON compares Check with encoding/json on arbitrary bytes:
// they agree on syntax for valid UTF-8 under the depth limit, and the
// lossless issue is the first number dsh would not write. It also holds
// the tape parser to the checker it replaced (refCheckJSON: the same
// issues), and, for valid JSON, its nodes to the text they index: walked
// back into JSON they give encoding/json's compact form, and every string
// reads as gjson (the reader used before) reads it.
func FuzzCheckJSON(f *testing.F) {
	for _, row := range fuzzSeedRows {
		f.Add([]byte(row))
	}
	for _, s := range []string{"-0", "0", "-0.0", "1e-400", "-1e-400", "1e400", "9007199254740991",
		"-9007199254740991", "9007199254740992", "-9007199254740992", "18446744073709551616",
		"0000", "\t[ 1 , { \"a\" : null } ]\r\n", `"\u00e9\uD83D\uDE00"`, "\"\x7f\"", "[" + strings.Repeat("[", 200) + "]"} {
		f.Add([]byte(s))
	}
	for _, row := range testcorpus.SeedRows(f, 1<<10) {
		f.Add(row)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		const unlimited = 1 << 30
		syntax, lossless := Check(b, maxDepth)
		full, fullLossless := Check(b, unlimited)
		refSyntax, refLossless := refCheckJSON(b, maxDepth)
		if !reflect.DeepEqual(syntax, refSyntax) || !reflect.DeepEqual(lossless, refLossless) {
			t.Fatalf("tape parse says %+v / %+v, the reference checker %+v / %+v for %q", syntax, lossless, refSyntax, refLossless, b)
		}
		// Checking UTF-8 on the way changes nothing for UTF-8 and never
		// lets anything else parse.
		uSyntax, uLossless := (&Tape{}).Parse(b, maxDepth, true)
		if utf8.Valid(b) && (!reflect.DeepEqual(uSyntax, syntax) || !reflect.DeepEqual(uLossless, lossless)) {
			t.Fatalf("parse with UTF-8 says %+v / %+v, without %+v / %+v for %q", uSyntax, uLossless, syntax, lossless, b)
		}
		if !utf8.Valid(b) && uSyntax == nil {
			t.Fatalf("parse with UTF-8 accepts %q", b)
		}
		for _, is := range []*Error{syntax, full} {
			if is != nil && (is.Offset < 0 || is.Offset > len(b) || is.Msg == "" ||
				is.Kind != InvalidJSON && is.Kind != TooDeep) {
				t.Fatalf("syntax issue %+v", is)
			}
		}
		for _, is := range []*Error{lossless, fullLossless} {
			if is != nil && (is.Kind != NotLossless || is.Offset < 0 || is.Offset >= len(b) ||
				b[is.Offset] != '-' && (b[is.Offset] < '0' || b[is.Offset] > '9')) {
				t.Fatalf("lossless issue %+v", is)
			}
		}
		if full != nil && full.Kind == TooDeep {
			t.Fatalf("depth %d reported too deep: %+v", 1<<30, full)
		}
		// The limit only adds JSON_TOO_DEEP; up to it both runs agree.
		switch {
		case syntax == nil:
			if full != nil || !reflect.DeepEqual(lossless, fullLossless) {
				t.Fatalf("limited run accepts, unlimited run says %+v / %+v vs %+v", full, fullLossless, lossless)
			}
		case syntax.Kind == InvalidJSON:
			if !reflect.DeepEqual(syntax, full) {
				t.Fatalf("limited run %+v, unlimited run %+v", syntax, full)
			}
		}

		if !utf8.Valid(b) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) >= 10000 {
			return // UTF-8 is the caller's job; encoding/json stops at depth 10000
		}
		valid := json.Valid(b)
		if valid != (full == nil) {
			t.Fatalf("encoding/json valid=%v, Check says %+v for %q", valid, full, b)
		}
		if syntax != nil && syntax.Kind == TooDeep && jsonDepth(b[:syntax.Offset+1]) <= maxDepth {
			t.Fatalf("JSON_TOO_DEEP at byte %d of %q, nested %d deep there", syntax.Offset, b, jsonDepth(b[:syntax.Offset+1]))
		}
		if valid && syntax == nil && jsonDepth(b) > maxDepth {
			t.Fatalf("depth %d accepted under the limit %d", jsonDepth(b), maxDepth)
		}
		if !valid {
			return
		}
		checkTape(t, b)
		off, msg := firstNotLossless(t, b)
		switch {
		case fullLossless == nil && off >= 0:
			t.Fatalf("number at byte %d of %q is not lossless (%s) but Check passes it", off, b, msg)
		case fullLossless != nil && off < 0:
			t.Fatalf("Check flags %+v in %q, every number is lossless", fullLossless, b)
		case fullLossless != nil && fullLossless.Offset != off:
			t.Fatalf("Check flags byte %d (%s), the first bad number is at byte %d (%s)", fullLossless.Offset, fullLossless.Msg, off, msg)
		}
	})
}

// firstNotLossless walks valid JSON with encoding/json and returns the
// offset of the first number dsh's lossless rule forbids as Check
// states it: an integer literal outside ±(2^53-1), -0 in any spelling, a
// value that overflows float64. -1 when there is none.
func firstNotLossless(t *testing.T, b []byte) (int, string) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	maxSafe := big.NewInt(MaxSafeInteger)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return -1, ""
		}
		if err != nil {
			t.Fatalf("encoding/json.Decoder on valid JSON %q: %v", b, err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			continue
		}
		s := string(num)
		off := int(dec.InputOffset()) - len(s)
		if !strings.ContainsAny(s, ".eE") {
			n, _ := new(big.Int).SetString(s, 10)
			if s == "-0" {
				return off, "-0"
			}
			if new(big.Int).Abs(n).Cmp(maxSafe) > 0 {
				return off, "unsafe integer"
			}
			continue
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return off, "not finite"
		}
		if f == 0 && s[0] == '-' {
			return off, "-0"
		}
	}
}

// checkTape parses valid JSON onto a tape and checks the nodes against the
// text: the walk of the nodes rebuilds encoding/json's compact form, every
// string (keys included) unescapes as gjson unescapes it, and next links
// each value to the one after it.
func checkTape(t *testing.T, b []byte) {
	t.Helper()
	tp := &Tape{}
	if syntax, _ := tp.Parse(b, 1<<30, true); syntax != nil {
		t.Fatalf("tape rejects valid JSON %q: %+v", b, syntax)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, b); err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	end := tapeWalk(t, tp, 0, &got)
	if end != uint32(len(tp.nodes)) || got.String() != want.String() {
		t.Fatalf("tape of %q walks to %q (%d of %d nodes), want %q", b, got.String(), end, len(tp.nodes), want.String())
	}
	for i, n := range tp.nodes {
		if n.typ != String {
			continue
		}
		raw := tp.s[n.start-1 : n.end+1]
		if s, want := tp.str(uint32(i)), gjson.Parse(raw).Str; s != want {
			t.Fatalf("string %s reads %q, gjson %q", raw, s, want)
		}
		if l := (Value{tp, uint32(i)}).UnescapedLen(); l != len(tp.str(uint32(i))) {
			t.Fatalf("string %s: unescapedLen %d, unescaped %d bytes", raw, l, len(tp.str(uint32(i))))
		}
	}
}

// tapeWalk writes the value at node i as compact JSON and returns the node
// after it, checking next on the way.
func tapeWalk(t *testing.T, tp *Tape, i uint32, out *strings.Builder) uint32 {
	n := tp.nodes[i]
	switch n.typ {
	case Object, Array:
		out.WriteByte(tp.s[n.start])
		k := i + 1
		for first := true; k < n.next; first = false {
			if !first {
				out.WriteByte(',')
			}
			if n.typ == Object {
				out.WriteString(Value{tp, k}.Raw())
				out.WriteByte(':')
				k++
			}
			k = tapeWalk(t, tp, k, out)
		}
		if k != n.next {
			t.Fatalf("container at byte %d: members end at node %d, next is %d", n.start, k, n.next)
		}
		out.WriteByte(tp.s[n.end-1])
	default:
		if n.next != i+1 {
			t.Fatalf("scalar node %d: next %d", i, n.next)
		}
		out.WriteString(Value{tp, i}.Raw())
	}
	return n.next
}

// jsonDepth is the deepest container nesting of a valid JSON text.
func jsonDepth(b []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"', !inString && c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
