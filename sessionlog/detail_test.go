package sessionlog

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestDetailTypes checks hasDetail against what decoding reads: a row of
// every known type, with a payload carrying every field some type's detail
// is read from, decodes to a non-empty Detail exactly when hasDetail says
// the type has one, and the shared noDetail stays empty.
func TestDetailTypes(t *testing.T) {
	const data = `{"turn":1,"step":1,"callId":"c1","name":"n","toolName":"n","arguments":"{}",` +
		`"role":"user","id":"m1","source":{"kind":"user"},"content":[{"type":"text","text":"x"}],` +
		`"message":{"role":"tool","id":"m2","callId":"c1","source":{"kind":"tool","callId":"c1"},"content":[{"type":"text","text":"x"}]},` +
		`"reason":{"kind":"completed"},"header":{"system":"s","config":{"provider":"p","model":"m"}},` +
		`"provider":"p","model":"m","subCallId":"s1","parentCallId":"c1","rootCallId":"r1","isError":true,` +
		`"error":{"code":"E"},"retry":2,"failure":{"code":"F","message":"f"},"inherited":true}`
	var types []string
	for typ := range knownTypes {
		types = append(types, typ)
	}
	sort.Strings(types)
	for _, typ := range types {
		d := NewRowDecoder(0, 0)
		d.SetFormat(Format{Version: 4})
		row, err := d.Decode(fmt.Appendf(nil, `{"type":%q,"seq":5,"time":1,"data":%s}`, typ, data), 1)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		if len(row.Events) != 1 {
			continue // packed and header rows: no event of this shape
		}
		e := &row.Events[0]
		if e.Detail == nil {
			t.Errorf("%s: nil Detail", typ)
			continue
		}
		filled := !reflect.DeepEqual(*e.Detail, Detail{})
		if filled != hasDetail(typ) {
			t.Errorf("%s: Detail filled = %v, hasDetail = %v", typ, filled, hasDetail(typ))
		}
		if hasDetail(typ) == (e.Detail == noDetail) {
			t.Errorf("%s: hasDetail = %v but the Detail is the shared noDetail: %v", typ, hasDetail(typ), e.Detail == noDetail)
		}
	}
	if !reflect.DeepEqual(*noDetail, Detail{}) {
		t.Fatalf("noDetail was written to: %+v", *noDetail)
	}
}

// TestGet2 checks that get2 finds what two get1 calls find: the first
// member of each name, escaped keys included, nothing in nested objects.
func TestGet2(t *testing.T) {
	for _, row := range []string{
		`{"turn":1,"turn":2,"step":3}`,
		`{"step":3,"x":{"turn":9},"turn":1,"step":4}`,
		`{"t\u0075rn":5,"step":6}`,
		`{"x":{"turn":1,"step":2}}`,
		`{}`,
		`[1,2]`,
	} {
		tp := getTape()
		if syntax, _ := tp.parse([]byte(row), 64, true); syntax != nil {
			t.Fatalf("%s: %v", row, syntax.msg)
		}
		v := tp.root()
		a, b := v.get2("turn", "step")
		wa, wb := v.get1("turn"), v.get1("step")
		if a != wa || b != wb {
			t.Errorf("%s: get2 = %v, %v; get1 = %v, %v", row, a.i, b.i, wa.i, wb.i)
		}
		putTape(tp)
	}
}

// TestInt64FastPath: the integers the tape marks as plain (at most 18
// digits) read as strconv reads them, and every other number as before.
func TestInt64FastPath(t *testing.T) {
	for _, num := range []string{
		"0", "-0", "7", "-7", "1790000285101", "999999999999999999", "-999999999999999999",
		"1000000000000000000", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
		"1.5", "1e3", "-0.0", "12345678901234567890",
	} {
		tp := getTape()
		if syntax, _ := tp.parse([]byte(`[`+num+`]`), 64, true); syntax != nil {
			t.Fatalf("%s: %v", num, syntax.msg)
		}
		v := tp.root().get1("0")
		got, err := v.Int64()
		want, werr := strconv.ParseInt(num, 10, 64)
		if (err == nil) != (werr == nil) || got != want && err == nil {
			t.Errorf("Int64(%s) = %d, %v; strconv: %d, %v", num, got, err, want, werr)
		}
		if plain := tp.nodes[v.i].esc; plain != (werr == nil && len(strings.TrimPrefix(num, "-")) <= 18) {
			t.Errorf("%s: plain = %v", num, plain)
		}
		putTape(tp)
	}
}
