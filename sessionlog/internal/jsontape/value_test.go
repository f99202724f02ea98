package jsontape

import (
	"strconv"
	"strings"
	"testing"
)

// TestGet2 checks that Get2 finds what two Get calls find: the first
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
		tp := Get()
		if syntax, _ := tp.Parse([]byte(row), 64, true); syntax != nil {
			t.Fatalf("%s: %v", row, syntax)
		}
		v := tp.Root()
		a, b := v.Get2("turn", "step")
		wa, wb := v.Get("turn"), v.Get("step")
		if a != wa || b != wb {
			t.Errorf("%s: Get2 = %v, %v; Get = %v, %v", row, a.i, b.i, wa.i, wb.i)
		}
		Put(tp)
	}
}

// TestGetPath: a path steps through object members and array elements by
// their decimal index; anything else is missing.
func TestGetPath(t *testing.T) {
	const row = `{"a":[{"b":"x"},[true,null]],"c":{"0":"key"},"d":"s"}`
	tp := &Tape{}
	if syntax, _ := tp.Parse([]byte(row), 64, true); syntax != nil {
		t.Fatal(syntax)
	}
	v := tp.Root()
	for _, tc := range []struct {
		path []string
		raw  string
	}{
		{[]string{"a", "0", "b"}, `"x"`},
		{[]string{"a", "1", "0"}, `true`},
		{[]string{"a", "1", "1"}, `null`},
		{[]string{"a", "2"}, ``},
		{[]string{"a", "-1"}, ``},
		{[]string{"a", "x"}, ``},
		{[]string{"c", "0"}, `"key"`},
		{[]string{"d", "0"}, ``},
		{[]string{"e"}, ``},
		{nil, row},
	} {
		if got := v.Get(tc.path...).Raw(); got != tc.raw {
			t.Errorf("Get(%q) = %q, want %q", tc.path, got, tc.raw)
		}
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
		tp := Get()
		if syntax, _ := tp.Parse([]byte(`[`+num+`]`), 64, true); syntax != nil {
			t.Fatalf("%s: %v", num, syntax)
		}
		v := tp.Root().Index(0)
		got, err := v.Int64()
		want, werr := strconv.ParseInt(num, 10, 64)
		if (err == nil) != (werr == nil) || got != want && err == nil {
			t.Errorf("Int64(%s) = %d, %v; strconv: %d, %v", num, got, err, want, werr)
		}
		if plain := tp.nodes[v.i].esc; plain != (werr == nil && len(strings.TrimPrefix(num, "-")) <= 18) {
			t.Errorf("%s: plain = %v", num, plain)
		}
		Put(tp)
	}
}

// TestInts: SafeInts stops at the first element that is no safe integer;
// Ints reads every element, 0 for one that is no integer.
func TestInts(t *testing.T) {
	for _, tc := range []struct {
		row  string
		safe []int64
		ok   bool
		ints []int64
	}{
		{`[1,-2,3]`, []int64{1, -2, 3}, true, []int64{1, -2, 3}},
		{`[]`, []int64{}, true, []int64{}},
		{`[1,9007199254740992,3]`, []int64{1}, false, []int64{1, 9007199254740992, 3}},
		{`[1,"2",[3],4.5]`, []int64{1}, false, []int64{1, 0, 0, 0}},
		{`{"a":1}`, nil, true, nil},
	} {
		tp := &Tape{}
		if syntax, _ := tp.Parse([]byte(tc.row), 64, true); syntax != nil {
			t.Fatal(syntax)
		}
		safe, ok := tp.Root().SafeInts()
		if !equalInts(safe, tc.safe) || ok != tc.ok {
			t.Errorf("%s: SafeInts = %v, %v; want %v, %v", tc.row, safe, ok, tc.safe, tc.ok)
		}
		if ints := tp.Root().Ints(); !equalInts(ints, tc.ints) {
			t.Errorf("%s: Ints = %v, want %v", tc.row, ints, tc.ints)
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
