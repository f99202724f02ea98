package sessionlog

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// TestShallowDecode: a shallow decode (SetShallow) of every row of every
// log a run has — the repository's dialects, seed and hostile files, and
// the corpus when found — gives the row kind, wrapper, problems, header and
// inferred format of the full decode after every row, and of every event
// the fields SetShallow promises, so the turn model places it the same.
func TestShallowDecode(t *testing.T) {
	paths := testcorpus.All(t)
	hostile, err := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(paths[0])), "hostile", "*.jsonl"))
	if err != nil || len(hostile) == 0 {
		t.Fatalf("no hostile testdata: %v", err)
	}
	rows := 0
	for _, p := range append(paths, hostile...) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rows += shallowMatchesFull(t, p, raw)
	}
	t.Logf("%d rows of %d logs", rows, len(paths)+len(hostile))
	// Rows that are, each alone in a log without a header, the only
	// evidence of its format, and the detail fields placing reads.
	for i, row := range []string{
		`{"type":"assistant/message","seq":0,"time":1,"data":{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"x","input":{"a":1}}]}}}`,
		`{"type":"assistant/message","seq":0,"time":1,"data":{"message":{"role":"assistant","content":[]},"stream":[{"type":"chunk","time":1,"chunk":{"type":"text-delta","text":"a"}}]}}`,
		`{"type":"assistant/attempt","seq":0,"time":1,"data":{"turn":1,"step":1,"stream":[]}}`,
		`{"type":"assistant/chunk","seq":0,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"stop"}}}}`,
		`{"type":"turn/end","seq":0,"time":1,"data":{"turn":1,"reason":{"kind":"forked"}}}`,
		`{"type":"turn/end","seq":0,"time":1,"data":{"turn":1,"reason":"completed"}}`,
		`{"type":"turn/end","seq":0,"time":1,"data":{"turn":1,"reason":{"kind":"error","error":{"code":"x","message":"y"}}}}`,
		`{"type":"system/message","seq":0,"time":1,"data":{"message":{"role":"system","id":"s","content":[]}}}`,
		`{"type":"developer/message","seq":0,"time":1,"data":{"message":{"role":"developer","id":"d","content":[]}}}`,
		`{"type":"user/message","seq":0,"time":1,"data":{"role":"user","content":[]}}`,
		`{"type":"tool/call","seq":0,"time":1,"data":{"turn":1,"step":1,"callId":"c","name":"n","arguments":"{}"}}`,
		`{"type":"tool/result","seq":0,"time":1,"data":{"message":{"role":"tool","toolCallId":"c","content":[]}}}`,
		`{"type":"tool/result","seq":0,"time":1,"data":{"message":{"role":"user","toolName":"n","callId":"c","content":"x","isError":true}}}`,
		`{"type":"tool/result","seq":0,"time":1,"data":{"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"c","isError":true}]}}}`,
		`{"type":"tool/ptc-dispatch","seq":0,"time":1,"data":{"subCallId":"s","parentCallId":"p","rootCallId":"r","name":"n","isError":true}}`,
		`{"type":"approval/asked","seq":0,"time":1,"data":{"callId":"c","toolName":"n"}}`,
		`{"type":"request/header","seq":0,"time":1,"data":{"header":{"config":{"provider":"p","model":"m"},"system":"s"},"reason":"r"}}`,
		`{"type":"request/header","seq":0,"time":1,"data":{"header":{"config":{"provider":"p","model":"m"}},"reason":"r"}}`,
	} {
		shallowMatchesFull(t, "case "+strconv.Itoa(i), []byte(row+"\n"))
	}
}

func shallowMatchesFull(t *testing.T, path string, raw []byte) int {
	t.Helper()
	full, err := NewDecoder(bytes.NewReader(raw), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	shallow := NewRowDecoder(0, 0)
	shallow.SetShallow(true)
	n := 0
	for {
		fr, err := full.Next()
		if errors.Is(err, io.EOF) {
			return n
		}
		if err != nil {
			// The full decoder stops here (an unsupported version); the
			// shallow one must refuse the same row.
			if fr != nil {
				if _, serr := shallow.Decode(bytes.Clone(fr.Bytes), fr.Line); serr == nil {
					t.Errorf("%s line %d: full decode fails (%v), shallow does not", path, fr.Line, err)
				}
			}
			return n
		}
		n++
		sr, err := shallow.Decode(bytes.Clone(fr.Bytes), fr.Line)
		if err != nil {
			t.Fatalf("%s line %d: %v", path, fr.Line, err)
		}
		where := func() string { return path + " line " + strconv.Itoa(fr.Line) }
		if sr.Kind != fr.Kind || sr.Wrapper != fr.Wrapper || sr.SessionID != fr.SessionID || sr.Method != fr.Method {
			t.Errorf("%s: shallow row %v/%v/%q/%q, full %v/%v/%q/%q", where(),
				sr.Kind, sr.Wrapper, sr.SessionID, sr.Method, fr.Kind, fr.Wrapper, fr.SessionID, fr.Method)
		}
		if !reflect.DeepEqual(sr.Problems, fr.Problems) {
			t.Errorf("%s: shallow problems %v, full %v", where(), sr.Problems, fr.Problems)
		}
		if !reflect.DeepEqual(sr.Header, fr.Header) {
			t.Errorf("%s: shallow header %+v, full %+v", where(), sr.Header, fr.Header)
		}
		if sf, ff := shallow.Format(), full.Format(); sf != ff {
			t.Errorf("%s: shallow format %+v, full %+v", where(), sf, ff)
		}
		if len(sr.Events) != len(fr.Events) {
			t.Errorf("%s: shallow %d events, full %d", where(), len(sr.Events), len(fr.Events))
			continue
		}
		for i := range fr.Events {
			if s, f := placementOf(&sr.Events[i], shallow.Format()), placementOf(&fr.Events[i], full.Format()); !reflect.DeepEqual(s, f) {
				t.Errorf("%s event %d: shallow %+v, full %+v", where(), i, s, f)
			}
		}
	}
}

// placement is what SetShallow promises of an event.
type placement struct {
	Type                    string
	Seq, Time, Turn, Step   int64
	HasTurn, HasStep        bool
	Surface                 SurfaceOp
	Sources                 []int64
	HasSources, Ignorable   bool
	CallID, SubCallID, Tool string
	ChunkType               string
	Streamed, IsError       bool
	HasErrorDetail          bool
	HasSystem               bool
	ReasonKind              string
	Model                   any
}

func placementOf(e *Event, f Format) placement {
	p := placement{Type: e.Type, Seq: e.Seq, Time: e.Time, Turn: e.Turn, Step: e.Step,
		HasTurn: e.HasTurn, HasStep: e.HasStep, Surface: e.Surface, Sources: e.Sources,
		HasSources: e.HasSources, Ignorable: e.Ignorable,
		CallID: e.CallID, SubCallID: e.SubCallID, Tool: e.ToolName,
		Streamed: e.Stream != nil, ReasonKind: e.Reason.Kind, Model: e.TurnModel(f)}
	if e.Type == "tool/result" {
		p.IsError, p.HasErrorDetail = e.IsError, e.HasErrorDetail
	}
	if e.Type == "request/header" {
		p.HasSystem = e.HasSystem
	}
	if e.Chunk != nil {
		p.ChunkType = e.Chunk.Type
	}
	return p
}
