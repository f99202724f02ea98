package sessionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// Hand-written rows of every dialect the decoder reads (values invented),
// plus the broken shapes it must survive. They seed all three fuzz targets;
// the corpus adds real rows at run time.
var (
	// Headers (docs/format.md §3).
	fuzzHeaders = []string{
		`{"type":"session","version":0,"id":"s0","createdAt":1783352050748,"cwd":"/home/a/app","delegationDepth":0}`,
		`{"type":"session","version":0,"id":"s0","createdAt":0,"seedLength":3,"delegationDepth":1,"origin":"subagent","parentSession":"p"}`,
		`{"type":"session","version":2,"id":"s2","createdAt":1783352050748,"isSeeded":false,"delegationDepth":0}`,
		`{"type":"session","version":3,"id":"s3","createdAt":1783352050748,"isSeeded":true,"delegationDepth":0,"agentPreset":"x"}`,
		`{"type":"session","version":4,"id":"s4","createdAt":1788699455000,"cwd":"/w","isSeeded":false,"delegationDepth":0}`,
		`{"type":"session","version":4,"id":"s4","createdAt":1,"isSeeded":false,"delegationDepth":0,"sandboxMode":"x"}`,
		`{"type":"session","version":7,"id":"s7","createdAt":1,"delegationDepth":0}`,
		`{"type":"session","version":"4","id":"s","createdAt":1}`,
		`{"type":"session","id":"","createdAt":-0}`,
	}
	// v0/v1 event rows and packed chunk rows (docs/format.md §5.1).
	fuzzV0Rows = []string{
		`{"type":"turn/start","seq":0,"time":1783352051000,"data":{"turn":1}}`,
		`{"type":"step/start","seq":1,"time":1783352051001,"data":{"turn":1,"step":1}}`,
		`{"type":"user/message","seq":2,"time":1783352051002,"data":{"turn":1,"step":1,"message":{"id":"m1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}},"surfaceOp":"append","sourceEventSeqs":[0,1]}`,
		`{"type":"assistant/chunk","seq":3,"time":1783352051003,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}}`,
		`{"type":"text-chunks","seq0":4,"time0":1783352051618,"data":{"turn":1,"step":1,"index":0,"dt":[0,26,-3],"texts":["The"," user"," wants"," X"]}}`,
		`{"type":"reasoning-chunks","seq0":8,"time0":1783352051618,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["ok"]}}`,
		`{"type":"tool-call-chunks","seq0":9,"time0":1783352051700,"data":{"turn":1,"step":1,"index":1,"dt":[1,1],"id":"call_1","name":"bash","args":["{\"co","mmand\":","\"ls\"}"]}}`,
		`{"type":"tool-call-chunks","seq0":9,"time0":1,"data":{"turn":1,"step":1,"index":1,"dt":[1],"id":"call_1","args":["{","}"]}}`,
		`{"type":"text-chunks","seq0":4,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a"]}}`,
		`{"type":"text-chunks","seq0":4,"time0":9007199254740991,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]}}`,
		`{"type":"text-chunks","seq0":4,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a",2],"extra":1}}`,
		`{"type":"assistant/chunk","seq":12,"time":1783352051800,"data":{"turn":1,"step":1,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}}`,
		`{"type":"assistant/message","seq":13,"time":1783352051801,"data":{"turn":1,"step":1,"message":{"id":"m2","role":"assistant","content":[{"type":"tool-call","id":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}],"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-chat"}},"usage":{"inputTokens":64,"outputTokens":2}},"surfaceOp":"append","sourceEventSeqs":[3,4,5,6,7]}`,
		`{"type":"tool/call","seq":14,"time":1783352051802,"data":{"turn":1,"step":1,"callId":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}}`,
		`{"type":"tool/result","seq":15,"time":1783352051803,"data":{"turn":1,"step":1,"message":{"id":"m3","role":"user","content":[{"type":"tool-result","toolCallId":"call_1","isError":false,"content":[{"type":"text","text":"a.go"}]}],"source":{"kind":"tool","callId":"call_1"}}},"surfaceOp":"append","sourceEventSeqs":[14]}`,
		`{"type":"tool/result","seq":15,"time":1,"data":{"turn":1,"step":1,"message":{"id":"interrupted-tool-result-call_1","role":"user","content":[]}},"error":{"code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append"}`,
		`{"type":"step/end","seq":16,"time":1783352051804,"data":{"turn":1,"step":1}}`,
		`{"type":"turn/end","seq":17,"time":1783352051805,"data":{"turn":1,"reason":{"kind":"completed"}}}`,
		`{"type":"turn/end","seq":17,"time":1,"data":{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"hook","reason":"stop"}}}}`,
		`{"type":"turn/end","seq":17,"time":1,"data":{"turn":1,"reason":{"kind":"error","error":{"code":"PROVIDER","message":"x","status":500}}}}`,
		`{"type":"user/message","seq":18,"time":1,"data":{"message":{"id":"m4","role":"user","content":[]}},"surfaceOp":{"op":"replace","start":2,"end":15},"sourceEventSeqs":[2,13,15]}`,
		`{"type":"tool/code-dispatch","seq":19,"time":1,"data":{"turn":1,"step":1,"subCallId":"s","parentCallId":"p","rootCallId":"r","name":"n","isError":true,"error":{"code":"E"}}}`,
		`{"type":"llm/retry","seq":20,"time":1,"data":{"turn":1,"step":1,"provider":"p","retry":2,"failure":{"code":"RATE","message":"m","status":429}}}`,
		`{"type":"session/end-seed","seq":21,"time":1,"data":{}}`,
		`{"type":"approval/asked","seq":22,"time":1,"data":{"callId":"c","toolName":"bash"}}`,
		`{"type":"request/header","seq":23,"time":1,"data":{"header":{"config":{"provider":"p","model":"m"},"system":"{{system}}","tools":"{{tools}}"}}}`,
	}
	// v2+ rows (docs/format.md §5.2, §5.3), v3 and v4 vocabulary.
	fuzzV2Rows = []string{
		`{"type":"assistant/message","seq":14,"time":1788699455309,"data":{"turn":1,"step":1,"message":{"id":"0a85","role":"assistant","content":[{"type":"text","text":"OK"}],"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}},"usage":{"inputTokens":64,"outputTokens":2},"stream":[{"type":"chunk","time":1788699455301,"chunk":{"type":"block-start","index":0,"blockType":"text"}},{"type":"text-chunks","time0":1788699455302,"index":0,"dt":[5],"texts":["O","K"]},{"type":"chunk","time":1788699455308,"chunk":{"type":"usage","usage":{"inputTokens":64,"outputTokens":2}}},{"type":"chunk","time":1788699455308,"chunk":{"type":"finish","reason":{"kind":"stop"}}},{"type":"future","time":1}]},"surfaceOp":"append"}`,
		`{"type":"assistant/attempt","seq":5,"time":1,"data":{"turn":1,"step":1,"stream":[{"type":"tool-call-chunks","time0":1,"index":1,"dt":[],"id":"c","name":"bash","args":["{}"]},{"type":"chunk","time":2,"chunk":{"type":"finish","reason":{"kind":"error","failure":{"code":"X"}}}}]}}`,
		`{"type":"user/message","seq":20,"time":1,"data":{"message":{"id":"m","role":"user","content":[]}},"surfaceOp":"append","sourceEventSeqs":[4,[9,12],20,21]}`,
		`{"type":"user/message","seq":30,"time":1,"data":{"message":{"id":"m","role":"user","content":[]}},"surfaceOp":{"op":"replace","startSeq":2,"endSeq":14},"sourceEventSeqs":[[2,14],[3,1],"x"]}`,
		`{"type":"system/message","seq":1,"time":1,"data":{"message":{"id":"sys","role":"system","content":[{"type":"text","text":"{{system}}"}]}},"surfaceOp":"append"}`,
		`{"type":"developer/message","seq":2,"time":1,"data":{"turn":1,"step":1,"message":{"id":"d","role":"developer","content":[]}},"surfaceOp":"append"}`,
		`{"type":"tool/result","seq":16,"time":1,"data":{"turn":1,"step":1,"message":{"id":"r","role":"tool","toolCallId":"call_1","isError":true,"content":[{"type":"text","text":"boom"}]},"error":{"code":"TOOL_FAILED"}},"surfaceOp":"append"}`,
		`{"type":"turn/end","seq":40,"time":1,"data":{"turn":2,"reason":{"kind":"forked"}}}`,
		`{"type":"session/end-seed","seq":3,"time":1,"data":{"inherited":true}}`,
		`{"type":"tool/ptc-dispatch-start","seq":4,"time":1,"data":{"turn":1,"step":1,"subCallId":"s","parentCallId":"p","rootCallId":"r","name":"n"}}`,
		`{"type":"plugin:acme/trace.v1","seq":5,"time":1,"data":{"x":[1,2.5,{"y":null}]},"ignorable":true}`,
		`{"type":"acme/unknown","seq":5,"time":1,"data":{},"ignorable":false,"extra":1}`,
		`{"type":"turn/start","seq":5,"time":1,"data":{"turn":1},"surfaceOp":"append"}`,
	}
	// Seed dialect (docs/format.md §12).
	fuzzSeedDialectRows = []string{
		`{"type":"user/message","seq":2,"time":1755000000020,"data":{"role":"user","content":[{"type":"text","text":"Fix the typo."}]},"surfaceOp":"append","sourceEventSeqs":[0]}`,
		`{"type":"assistant/chunk","seq":4,"time":1755000000040,"data":{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","name":"bash","arguments":"{\"command\":\"ls\"}"}}}`,
		`{"type":"assistant/message","seq":5,"time":1,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls"}}]}},"surfaceOp":"append"}`,
		`{"type":"tool/result","seq":7,"time":1,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"bash","content":"a.go"}},"surfaceOp":"append"}`,
		`{"type":"turn/end","seq":9,"time":1,"data":{"turn":1,"reason":"completed"}}`,
	}
	// Live transports' line wrappers (docs/format.md §10).
	fuzzWrappedRows = []string{
		`{"method":"session.event","params":{"sessionId":"s1","event":{"type":"turn/start","seq":3,"time":0,"data":{"turn":1}}}}`,
		`{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"s1","event":{"type":"text-chunks","seq0":4,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["x"]}}}}`,
		`{"method":"session.status","params":{"sessionId":"s1","status":"running"}}`,
		`{"method":"session.event","params":{"sessionId":"","event":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`,
		`{"type":"session_event","sessionId":"s1","event":{"type":"turn/start","seq":1,"time":0,"data":{"turn":1}}}`,
		`{"type":"session_event","sessionId":"s1","event":{"type":"session","version":4,"id":"s1","createdAt":1,"isSeeded":false,"delegationDepth":0}}`,
		`{"type":"result","sessionId":"s1","subtype":"success"}`,
		`{"sessionId":"s1","event":{"type":"step/start","seq":2,"time":0,"data":{"turn":1,"step":1}}}`,
		`{"sessionId":"s1","event":"nope"}`,
	}
	// Broken rows.
	fuzzBrokenRows = []string{
		``,
		` `,
		`[]`,
		`"row"`,
		`{}`,
		`{"type":1}`,
		`{"type":"turn/start","seq":-1,"time":1,"data":{}}`,
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
		`{"type":"user/message","seq":9007199254740991,"time":1,"data":{},"surfaceOp":"append","sourceEventSeqs":[[0,9007199254740990]]}`,
	}

	fuzzSeedRows = slices.Concat(fuzzHeaders, fuzzV0Rows, fuzzV2Rows, fuzzSeedDialectRows, fuzzWrappedRows, fuzzBrokenRows)
)

// fuzzSeedFiles are whole hand-written logs, one per dialect, for FuzzDecoder.
var fuzzSeedFiles = []string{
	strings.Join(fuzzHeaders, "\n") + "\n",
	fuzzHeaders[0] + "\n" + strings.Join(fuzzV0Rows, "\n") + "\n",
	fuzzHeaders[4] + "\n" + strings.Join(fuzzV2Rows, "\n") + "\n",
	strings.Join(fuzzSeedDialectRows, "\n") + "\n",
	strings.Join(fuzzWrappedRows, "\n") + "\n",
	fuzzHeaders[0] + "\r\n" + fuzzV0Rows[0] + "\r\n\r\n \n" + fuzzV0Rows[1] + "\n" + `{"type":"step/end","seq":2,"ti`,
	strings.Join(fuzzBrokenRows, "\n") + "\n",
}

// fuzzCorpusFiles reads the repository's session logs and, when a corpus
// is found, every corpus file.
func fuzzCorpusFiles(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, path := range testcorpus.All(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// Prior stream states for FuzzRowDecoder: what the RowDecoder saw before
// the fuzzed row (state & 7).
var fuzzPriorStates = [8]func(d *RowDecoder) int{
	func(d *RowDecoder) int { return 0 }, // first row of a headerless stream
	func(d *RowDecoder) int { d.Decode([]byte(fuzzHeaders[0]), 1); return 1 },
	func(d *RowDecoder) int { d.Decode([]byte(fuzzHeaders[4]), 1); return 1 },
	func(d *RowDecoder) int { d.SetFormat(Format{Version: 2, Known: true}); return 5 },
	func(d *RowDecoder) int { d.SetFormat(Format{Known: true, Seed: true}); return 5 },
	func(d *RowDecoder) int { d.SetFormat(Format{Version: 3, Known: true}); return 5 },
	func(d *RowDecoder) int { d.Decode([]byte(fuzzHeaders[2]), 1); return 1 },
	func(d *RowDecoder) int { d.Decode([]byte(fuzzHeaders[3]), 1); return 1 },
}

// fuzzRowDecoder builds the decoder FuzzRowDecoder runs under state: the
// prior stream (state & 7) and, with state & 8, tight limits so the length
// and depth checks fire on small inputs.
func fuzzRowDecoder(state uint8) (d *RowDecoder, line, maxRowBytes, maxDepth int) {
	maxRowBytes, maxDepth = DefaultMaxRowBytes, DefaultMaxDepth
	if state&8 != 0 {
		maxRowBytes, maxDepth = 256, 3
	}
	d = NewRowDecoder(maxRowBytes, maxDepth)
	line = fuzzPriorStates[state&7](d) + 1
	return d, line, maxRowBytes, maxDepth
}

// FuzzRowDecoder decodes one arbitrary row and validates it: no panic, and
// the row's kind, events and problems agree with each other.
func FuzzRowDecoder(f *testing.F) {
	for i, row := range fuzzSeedRows {
		f.Add([]byte(row), uint8(i))
	}
	for i, row := range testcorpus.SeedRows(f, 4<<10) {
		f.Add(row, uint8(i%16))
	}
	f.Fuzz(func(t *testing.T, b []byte, state uint8) {
		d, line, maxRowBytes, maxDepth := fuzzRowDecoder(state)
		in := bytes.Clone(b)
		// The same row decoded from an arena, reset once before (with
		// what another row left in it), decodes alike.
		var arena Arena
		prime := NewRowDecoder(0, 0)
		prime.SetArena(&arena)
		_, _ = prime.Decode([]byte(fuzzSeedRows[int(state)%len(fuzzSeedRows)]), 1)
		arena.Reset()
		ad, _, _, _ := fuzzRowDecoder(state)
		ad.SetArena(&arena)
		arow, aerr := ad.Decode(bytes.Clone(b), line)
		row, err := d.Decode(b, line)
		if row == nil {
			t.Fatalf("Decode returned no row (err %v)", err)
		}
		if fmt.Sprint(err) != fmt.Sprint(aerr) || !reflect.DeepEqual(row, arow) {
			t.Fatalf("from an arena: %+v, %v; without: %+v, %v", arow, aerr, row, err)
		}
		// A shallow decode gives the same kind, problems and format, and
		// what it promises of the events.
		sd, _, _, _ := fuzzRowDecoder(state)
		sd.SetShallow(true)
		srow, serr := sd.Decode(bytes.Clone(b), line)
		if fmt.Sprint(err) != fmt.Sprint(serr) || srow.Kind != row.Kind || !reflect.DeepEqual(srow.Problems, row.Problems) ||
			sd.Format() != d.Format() || len(srow.Events) != len(row.Events) {
			t.Fatalf("shallow: %+v, %v (format %+v); full: %+v, %v (format %+v)", srow, serr, sd.Format(), row, err, d.Format())
		}
		for i := range row.Events {
			if s, f := placementOf(&srow.Events[i], sd.Format()), placementOf(&row.Events[i], d.Format()); !reflect.DeepEqual(s, f) {
				t.Fatalf("shallow event %d: %+v; full %+v", i, s, f)
			}
		}
		if err != nil {
			var uv *UnsupportedVersionError
			if !errors.As(err, &uv) || row.Kind != RowHeader {
				t.Fatalf("Decode error %v (%T) on a %s row; only *UnsupportedVersionError on a header is allowed", err, err, row.Kind)
			}
		}
		if row.Line != line || !bytes.Equal(row.Bytes, in) {
			t.Fatalf("row line %d bytes %q, want line %d bytes %q", row.Line, row.Bytes, line, in)
		}
		checkFuzzedRow(t, row)

		// Syntax agrees with encoding/json: a row it rejects is invalid, and
		// a valid UTF-8 row it accepts is never called invalid JSON.
		switch {
		case len(in) > maxRowBytes:
			wantProblem(t, row, CodeRowTooLong)
		case !json.Valid(in):
			if row.Kind != RowInvalid {
				t.Fatalf("encoding/json rejects %q but the row decoded as %s", in, row.Kind)
			}
		case !utf8.Valid(in):
			wantProblem(t, row, CodeUTF8Invalid)
		case jsonDepth(in) <= maxDepth:
			for _, p := range row.Problems {
				if p.Code == CodeJSONInvalid || p.Code == CodeJSONTooDeep {
					t.Fatalf("valid JSON %q (depth %d ≤ %d) reported as %s: %s", in, jsonDepth(in), maxDepth, p.Code, p.Message)
				}
			}
		}

		// The validator takes whatever the decoder produced.
		v := NewValidator()
		viols := v.Row(row, d.Format())
		if len(viols) < len(row.Problems) || !slices.Equal(viols[:len(row.Problems)], row.Problems) {
			t.Fatalf("validator violations %v do not start with the row's problems %v", viols, row.Problems)
		}
		for _, viol := range viols {
			checkFuzzedViolation(t, viol, line)
		}
		for _, viol := range v.Finish(d.Format()) {
			if viol.Code == "" || viol.Message == "" {
				t.Fatalf("Finish violation without code or message: %+v", viol)
			}
		}

		// Decoding is deterministic.
		d2, line2, _, _ := fuzzRowDecoder(state)
		row2, err2 := d2.Decode(bytes.Clone(in), line2)
		if (err == nil) != (err2 == nil) || row2.Kind != row.Kind || len(row2.Events) != len(row.Events) ||
			!reflect.DeepEqual(row2.Problems, row.Problems) {
			t.Fatalf("decoding the same row twice differs: %s %d events %v, then %s %d events %v",
				row.Kind, len(row.Events), row.Problems, row2.Kind, len(row2.Events), row2.Problems)
		}
	})
}

// checkFuzzedRow checks what every decoded row must satisfy.
func checkFuzzedRow(t *testing.T, row *Row) {
	t.Helper()
	if row.Kind > RowInvalid {
		t.Fatalf("row kind %d out of range", row.Kind)
	}
	if len(row.Events) > 0 && row.Kind != RowEvent && row.Kind != RowPacked {
		t.Fatalf("a %s row carries %d events", row.Kind, len(row.Events))
	}
	for _, p := range row.Problems {
		checkFuzzedViolation(t, p, row.Line)
	}
	switch row.Kind {
	case RowEvent:
		if len(row.Events) != 1 {
			t.Fatalf("an event row carries %d events", len(row.Events))
		}
		if row.Wrapper != WrapNone && row.SessionID == "" {
			t.Fatalf("a wrapped event row without session id")
		}
	case RowPacked:
		if len(row.Events) == 0 {
			t.Fatalf("a packed row without events")
		}
		for k := range row.Events {
			e := &row.Events[k]
			if e.Type != "assistant/chunk" || e.Chunk == nil || e.Seq != row.Events[0].Seq+int64(k) || !e.HasTurn || !e.HasStep {
				t.Fatalf("packed member %d: %+v", k, e)
			}
		}
	case RowHeader:
		if row.Header == nil {
			t.Fatalf("a header row without Header")
		}
	case RowInvalid:
		if len(row.Problems) == 0 {
			t.Fatalf("an invalid row without problems")
		}
	}
	for k := range row.Events {
		e := &row.Events[k]
		if e.Row != row || e.Member != k {
			t.Fatalf("event %d: Row %p Member %d, want %p %d", k, e.Row, e.Member, row, k)
		}
		if e.Seq < 0 || e.Seq > jsontape.MaxSafeInteger+int64(len(row.Events)) {
			t.Fatalf("event %d: seq %d", k, e.Seq)
		}
		if e.Surface.Kind > SurfaceInvalid {
			t.Fatalf("event %d: surface kind %d", k, e.Surface.Kind)
		}
		if e.SourcesRanged && !e.HasSources {
			t.Fatalf("event %d: ranged sources without sources", k)
		}
	}
}

func checkFuzzedViolation(t *testing.T, v Violation, line int) {
	t.Helper()
	if v.Line != line || v.Code == "" || v.Message == "" || v.Seq < -1 {
		t.Fatalf("violation %+v: want line %d, a code, a message and seq ≥ -1", v, line)
	}
}

func wantProblem(t *testing.T, row *Row, code string) {
	t.Helper()
	if row.Kind != RowInvalid || len(row.Problems) == 0 || row.Problems[0].Code != code {
		t.Fatalf("want an invalid row with %s, got %s %v", code, row.Kind, row.Problems)
	}
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

// FuzzDecoder mode bits.
const (
	fuzzZstd         = 1 << iota // compress the input into zstd first
	fuzzFramePerLine             // … one frame per line, as dsh's append batches
	fuzzTornFrame                // … and cut the last frame short
	fuzzUnterminated             // Options.DecodeUnterminated
	fuzzShortRows                // Options.MaxRowBytes = 16
	fuzzOneByte                  // the reader returns one byte per Read
)

// FuzzDecoder reads an arbitrary stream to the end: no panic, no hang, and
// for plain input (or input this test compressed itself) exactly the rows
// the bytes hold, with their lines, offsets and bytes.
func FuzzDecoder(f *testing.F) {
	for i, file := range fuzzSeedFiles {
		for _, mode := range []uint8{0, fuzzZstd, fuzzZstd | fuzzFramePerLine, fuzzZstd | fuzzTornFrame, fuzzUnterminated | fuzzOneByte, fuzzShortRows} {
			f.Add([]byte(file), mode^uint8(i<<6))
		}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	raw := enc.EncodeAll([]byte(fuzzSeedFiles[1]), nil)
	f.Add(raw, uint8(0))                            // a real zstd file
	f.Add(raw[:len(raw)-3], uint8(0))               // torn
	f.Add(append(bytes.Clone(raw), 1, 2), uint8(0)) // trailing garbage
	for i, file := range fuzzCorpusFiles(f) {
		if len(file) <= 8<<10 {
			f.Add(file, uint8(i%64))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		opts := Options{DecodeUnterminated: mode&fuzzUnterminated != 0}
		maxRow := DefaultMaxRowBytes
		if mode&fuzzShortRows != 0 {
			opts.MaxRowBytes, maxRow = 16, 16
		}
		input, plain := data, data
		torn := false
		switch {
		case mode&fuzzZstd != 0:
			input = fuzzCompress(enc, data, mode&fuzzFramePerLine != 0)
			if mode&fuzzTornFrame != 0 && len(input) > 0 {
				input = input[:len(input)-1-len(data)%7]
				torn = true
			}
		case sessionroot.IsZstd(data):
			plain = nil // the fuzzer's own zstd: only the generic checks
		}
		open := func() io.Reader {
			if mode&fuzzOneByte != 0 {
				return iotest.OneByteReader(bytes.NewReader(input))
			}
			return bytes.NewReader(input)
		}

		dec, err := NewDecoder(open(), opts)
		if err != nil {
			t.Fatalf("NewDecoder: %v", err)
		}
		defer dec.Close()
		// The same stream read with ReuseRows, in step: every row the same.
		ropts := opts
		ropts.ReuseRows = true
		rdec, err := NewDecoder(open(), ropts)
		if err != nil {
			t.Fatalf("NewDecoder(ReuseRows): %v", err)
		}
		defer rdec.Close()
		want := fuzzExpectRows(plain, maxRow, opts.DecodeUnterminated)
		v := NewValidator()
		var rows, events int
		var checked, checkedEvents int // what Check counts: rows not returned with an error
		var last *Row
		var readErr error
		for {
			row, err := dec.Next()
			rrow, rerr := rdec.Next()
			if fmt.Sprint(err) != fmt.Sprint(rerr) || !reflect.DeepEqual(row, rrow) {
				t.Fatalf("with ReuseRows: %+v, %v; without: %+v, %v", rrow, rerr, row, err)
			}
			if err == io.EOF {
				if row != nil {
					t.Fatalf("a row returned with io.EOF")
				}
				break
			}
			if row == nil && err == nil {
				t.Fatalf("Next returned neither row nor error")
			}
			if row != nil {
				rows++
				events += len(row.Events)
				if last != nil && (row.Line <= last.Line || row.Offset < last.Offset+int64(len(last.Bytes))) {
					t.Fatalf("row at line %d offset %d after line %d offset %d", row.Line, row.Offset, last.Line, last.Offset)
				}
				last = row
				if bytes.IndexByte(row.Bytes, '\n') >= 0 {
					t.Fatalf("line %d: row bytes hold a newline", row.Line)
				}
				checkFuzzedRow(t, row)
				if plain != nil {
					if rows > len(want) {
						t.Fatalf("row %d (line %d %q) beyond the %d rows the input holds", rows, row.Line, row.Bytes, len(want))
					}
					want[rows-1].check(t, row)
				} else if rows > 1<<16 {
					return // a decompression bomb of the fuzzer's making: enough
				}
				for _, viol := range v.Row(row, dec.Format()) {
					// A seq gap held inside a step is reported later, at its own line.
					if viol.Code != CodeSeqGap || viol.Line < 1 || viol.Line > row.Line {
						checkFuzzedViolation(t, viol, row.Line)
					}
				}
			}
			if err == nil {
				checked++
				checkedEvents += len(row.Events)
			} else {
				var uv *UnsupportedVersionError
				var ce *CorruptError
				switch {
				case errors.As(err, &uv):
					if row == nil || row.Kind != RowHeader {
						t.Fatalf("UnsupportedVersionError without its header row")
					}
				case errors.As(err, &ce):
					if plain != nil && !torn {
						t.Fatalf("CorruptError on a well-formed stream: %v", err)
					}
				default:
					t.Fatalf("unexpected error %v (%T)", err, err)
				}
				readErr = err
				break
			}
		}
		if row, err := dec.Next(); row != nil || err != io.EOF {
			t.Fatalf("Next after the end: %v, %v", row, err)
		}
		v.Finish(dec.Format())

		if plain != nil && readErr == nil && !torn {
			if rows != len(want) {
				t.Fatalf("%d rows, the input holds %d", rows, len(want))
			}
			fuzzCheckTail(t, dec.Tail(), plain, opts.DecodeUnterminated)
		}
		if torn && readErr == nil && (dec.Tail() == nil || !dec.Tail().Frame) {
			t.Fatalf("a torn zstd frame ended without a frame tail: %+v", dec.Tail())
		}

		// Check reads the same stream the same way.
		rep, err := Check(open(), opts)
		if (err == nil) != (readErr == nil) || rep.Rows != checked || rep.Events != checkedEvents {
			t.Fatalf("Check: %d rows %d events err %v; Decoder: %d rows %d events err %v",
				rep.Rows, rep.Events, err, checked, checkedEvents, readErr)
		}
	})
}

// fuzzCompress encodes data as zstd: one frame, or one frame per line.
func fuzzCompress(enc *zstd.Encoder, data []byte, perLine bool) []byte {
	if !perLine {
		return enc.EncodeAll(data, nil)
	}
	var out []byte
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 {
			n = len(data)
		}
		out = enc.EncodeAll(data[:n], out)
		data = data[n:]
	}
	return out
}

// fuzzRow is what FuzzDecoder expects of one row.
type fuzzRow struct {
	line    int
	offset  int64
	bytes   []byte
	tooLong bool
}

func (w fuzzRow) check(t *testing.T, row *Row) {
	t.Helper()
	if row.Line != w.line || row.Offset != w.offset {
		t.Fatalf("row at line %d offset %d, want line %d offset %d", row.Line, row.Offset, w.line, w.offset)
	}
	if w.tooLong {
		wantProblem(t, row, CodeRowTooLong)
		return
	}
	if !bytes.Equal(row.Bytes, w.bytes) {
		t.Fatalf("line %d: row bytes %q, want %q", row.Line, row.Bytes, w.bytes)
	}
}

// fuzzExpectRows lists the rows plain holds: every non-blank line, too-long
// lines as such, and the unterminated tail when it is to be decoded.
func fuzzExpectRows(plain []byte, maxRow int, unterminated bool) []fuzzRow {
	var out []fuzzRow
	var off int64
	for line := 1; len(plain) > 0; line++ {
		n := bytes.IndexByte(plain, '\n')
		terminated := n >= 0
		if !terminated {
			n = len(plain)
		}
		b := plain[:n]
		switch {
		case !terminated && !unterminated:
		case len(b) > maxRow:
			out = append(out, fuzzRow{line: line, offset: off, tooLong: true})
		case len(bytes.Trim(b, " \t\r")) > 0: // blank is JSON whitespace only: "\f", "\v", U+00A0 make bad rows
			out = append(out, fuzzRow{line: line, offset: off, bytes: b})
		}
		if !terminated {
			break
		}
		off += int64(n + 1)
		plain = plain[n+1:]
	}
	return out
}

// fuzzCheckTail checks the torn tail reported for a plain stream.
func fuzzCheckTail(t *testing.T, tail *Tail, plain []byte, unterminated bool) {
	t.Helper()
	rest := plain[bytes.LastIndexByte(plain, '\n')+1:]
	if len(rest) == 0 || unterminated {
		if tail != nil {
			t.Fatalf("torn tail %+v reported, none expected", tail)
		}
		return
	}
	lines := bytes.Count(plain, []byte("\n")) + 1
	if tail == nil || tail.Line != lines || tail.Frame || tail.Bytes != len(rest) {
		t.Fatalf("torn tail %+v, want line %d of %d bytes", tail, lines, len(rest))
	}
}
