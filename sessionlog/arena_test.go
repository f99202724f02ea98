package sessionlog_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// rowsOf returns the non-blank lines of a log.
func rowsOf(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			out = append(out, bytes.Clone(sc.Bytes()))
		}
	}
	return out
}

// An arena changes where rows live, not what they say: every row of every
// log decodes to the same row with one (reset before each row, and once a
// batch of rows) as without, and an event made its own (Own) survives the
// reset, poisoned or not.
func TestArenaDecodesAlike(t *testing.T) {
	t.Setenv("DSH_ARENA_POISON", "1") // read at the first Reset of the process
	for _, l := range testcorpus.Logs(t) {
		rows := rowsOf(t, l.Path)
		plain := sessionlog.NewRowDecoder(0, 0)
		perRow := sessionlog.NewRowDecoder(0, 0)
		batched := sessionlog.NewRowDecoder(0, 0)
		var a1, a2 sessionlog.Arena
		perRow.SetArena(&a1)
		batched.SetArena(&a2)
		var kept []*sessionlog.Event
		var want []sessionlog.Event
		for i, b := range rows {
			w, err1 := plain.Decode(b, i+1)
			a1.Reset()
			g, err2 := perRow.Decode(b, i+1)
			if (err1 == nil) != (err2 == nil) {
				t.Fatalf("%s:%d: error %v with an arena, %v without", l.Name, i+1, err2, err1)
			}
			if err1 != nil {
				break
			}
			if !reflect.DeepEqual(w, g) {
				t.Fatalf("%s:%d: decoded with an arena:\n%+v\nwithout:\n%+v", l.Name, i+1, g, w)
			}
			if i%64 == 0 {
				a2.Reset() // a batch of 64 rows
			}
			bg, _ := batched.Decode(b, i+1)
			if !reflect.DeepEqual(w, bg) {
				t.Fatalf("%s:%d: decoded in a batch:\n%+v\nwithout:\n%+v", l.Name, i+1, bg, w)
			}
			for k := range bg.Events {
				kept = append(kept, bg.Events[k].Own())
				want = append(want, w.Events[k])
			}
		}
		a1.Reset()
		a2.Reset()
		for k, e := range kept {
			w := want[k]
			if !reflect.DeepEqual(*e.Row, *w.Row) {
				t.Fatalf("%s: seq %d kept with Own differs after the reset:\n%+v\nwant\n%+v", l.Name, w.Seq, *e.Row, *w.Row)
			}
		}
	}
}

// Without Own, the poisoned reset shows: an event kept past its batch no
// longer reads as it was decoded.
func TestArenaPoisonShowsKeptEvents(t *testing.T) {
	t.Setenv("DSH_ARENA_POISON", "1")
	var a sessionlog.Arena
	d := sessionlog.NewRowDecoder(0, 0)
	d.SetArena(&a)
	a.Reset() // the first Reset reads the environment
	row, err := d.Decode([]byte(`{"type":"tool/call","seq":0,"time":1,"data":{"turn":1,"step":1,"callId":"c1","name":"read","arguments":"{}"}}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	e := &row.Events[0]
	own := e.Own()
	a.Reset()
	if e.Type == "tool/call" || e.CallID == "c1" {
		t.Fatalf("a poisoned reset left the event readable: %+v", *e)
	}
	if own.Type != "tool/call" || own.CallID != "c1" || own.Seq != 0 || own.Row.Events[0].CallID != "c1" {
		t.Fatalf("the event's own copy changed with the reset: %+v", *own)
	}
}

// A stream decoded with ReuseRows yields, row by row, what one without it
// yields: the same rows, problems, format and torn tail.
func TestDecoderReuseRows(t *testing.T) {
	t.Setenv("DSH_ARENA_POISON", "1")
	paths := testcorpus.All(t)
	root, err := testcorpus.Root()
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := filepath.Glob(filepath.Join(root, "testdata", "hostile", "*"))
	if err != nil || len(hostile) == 0 {
		t.Fatalf("no testdata/hostile files (%v)", err)
	}
	for _, p := range append(paths, hostile...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		plain, err1 := sessionlog.NewDecoder(bytes.NewReader(b), sessionlog.Options{})
		reuse, err2 := sessionlog.NewDecoder(bytes.NewReader(b), sessionlog.Options{ReuseRows: true})
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v / %v", p, err1, err2)
		}
		for n := 1; ; n++ {
			w, errW := plain.Next()
			g, errG := reuse.Next()
			if (errW == nil) != (errG == nil) || (errW != nil && errW.Error() != errG.Error()) {
				t.Fatalf("%s: row %d: error %v with ReuseRows, %v without", p, n, errG, errW)
			}
			if errW != nil {
				break
			}
			if !reflect.DeepEqual(w, g) {
				t.Fatalf("%s: row %d with ReuseRows:\n%+v\nwithout:\n%+v", p, n, g, w)
			}
			if plain.Format() != reuse.Format() {
				t.Fatalf("%s: row %d: format %v with ReuseRows, %v without", p, n, reuse.Format(), plain.Format())
			}
			if !reflect.DeepEqual(plain.Header(), reuse.Header()) {
				t.Fatalf("%s: row %d: header %+v with ReuseRows, %+v without", p, n, reuse.Header(), plain.Header())
			}
		}
		if !reflect.DeepEqual(plain.Tail(), reuse.Tail()) {
			t.Fatalf("%s: tail %v with ReuseRows, %v without", p, reuse.Tail(), plain.Tail())
		}
		plain.Close()
		reuse.Close()
	}
}

// The header a ReuseRows Decoder reports stays the header row's after the
// memory of that row is reused: a log many read buffers long.
func TestDecoderReuseRowsHeader(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`{"type":"session","version":2,"id":"sess-abc","createdAt":1,"delegationDepth":0,"isSeeded":false,"cwd":"/work/x","parentSession":"sess-parent","origin":"cli","agentPreset":"code"}` + "\n")
	for i := range 20000 {
		fmt.Fprintf(&b, `{"type":"llm/retry-started","seq":%d,"time":1787000000000,"data":{"retry":1}}`+"\n", i)
	}
	want := sessionlog.Header{Version: 2, HasVersion: true, ID: "sess-abc", CreatedAt: 1, Cwd: "/work/x",
		ParentSession: "sess-parent", Origin: "cli", AgentPreset: "code", HasIsSeeded: true}
	dec, err := sessionlog.NewDecoder(bytes.NewReader(b.Bytes()), sessionlog.Options{ReuseRows: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for n := 1; ; n++ {
		if _, err := dec.Next(); err != nil {
			break
		}
		if h := dec.Header(); h == nil || *h != want {
			t.Fatalf("after row %d: header %+v, want %+v", n, h, want)
		}
	}
}
