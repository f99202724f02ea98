package sessionlog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// at is one expected violation: where, and which rule.
type at struct {
	line int
	seq  int64 // -1: the row's seq is unknown
	code string
}

func (a at) String() string { return fmt.Sprintf("line %d seq %d %s", a.line, a.seq, a.code) }

func violationsAt(vs []Violation) []at {
	out := []at{}
	for _, v := range vs {
		out = append(out, at{v.Line, v.Seq, v.Code})
	}
	return out
}

// assertViolations checks the exact list of violations: nothing missing,
// nothing extra, in order.
func assertViolations(t *testing.T, got []Violation, want ...at) {
	t.Helper()
	if want == nil {
		want = []at{}
	}
	if g := violationsAt(got); !slices.Equal(g, want) {
		t.Errorf("violations:\n got %v\nwant %v", g, want)
		for _, v := range got {
			t.Logf("  %d %v", v.Line, v)
		}
	}
}

// TestHostileFiles: each file under testdata/hostile breaks one rule of the
// format, and Check reports exactly that rule at the offending line and seq,
// then keeps reading.
func TestHostileFiles(t *testing.T) {
	tests := []struct {
		file string
		want []at
	}{
		{"malformed-json.jsonl", []at{{3, -1, CodeJSONInvalid}}},
		{"seq-gap.jsonl", []at{{4, 3, CodeSeqGap}}},
		{"seq-duplicate.jsonl", []at{{5, 2, CodeSeqDuplicate}}},
		{"seq-regression.jsonl", []at{{5, 1, CodeSeqRegression}}},
		{"turn-end-step-open.jsonl", []at{{4, 2, CodeTurnEndStepOpen}}},
		{"tool-result-no-call.jsonl", []at{{5, 3, CodeToolResultNoCall}}},
		{"step-outside-turn.jsonl", []at{{6, 4, CodeStepOutsideTurn}}},
		{"turn-skipped.jsonl", []at{{4, 2, CodeTurnNotNext}}},
		{"packed-dt-length.jsonl", []at{{4, 2, CodePackedRowInvalid}}},
		{"packed-extra-key.jsonl", []at{{4, 2, CodePackedRowInvalid}}},
		{"packed-extra-data-key.jsonl", []at{{4, 2, CodePackedRowInvalid}}},
		{"packed-empty-texts.jsonl", []at{{4, 2, CodePackedRowInvalid}}},
		{"replace-not-on-surface.jsonl", []at{{5, 3, CodeReplaceNotOnSurface}}},
		{"not-object-array.jsonl", []at{{3, -1, CodeRowNotObject}}},
		{"not-object-string.jsonl", []at{{3, -1, CodeRowNotObject}}},
		{"not-object-number.jsonl", []at{{3, -1, CodeRowNotObject}}},
		{"missing-seq.jsonl", []at{{4, -1, CodeEnvelopeInvalid}}},
		{"lossless-negative-zero.jsonl", []at{{3, 1, CodeNotLossless}}},
		{"lossless-2p53.jsonl", []at{{3, 1, CodeNotLossless}}},
		{"header-not-first.jsonl", []at{{2, -1, CodeHeaderMisplaced}}},
		{"surface-op-missing.jsonl", []at{{4, 2, CodeSurfaceOpMissing}}},
		{"surface-keys-on-log-only.jsonl", []at{{3, 1, CodeSurfaceKeysLogged}}},
		{"sources-later-seq.jsonl", []at{{6, 4, CodeSourcesInvalid}}},
		{"tool-call-unresolved.jsonl", []at{{7, 5, CodeToolCallUnresolved}}},
		{"tool-call-not-advertised.jsonl", []at{{5, 3, CodeToolCallNotAdvertised}}},
		{"tool-call-arguments-differ.jsonl", []at{{5, 3, CodeToolCallNotAdvertised}}},
		{"llm-retry-outside-step.jsonl", []at{{5, 3, CodeEventOutsideStep}}},
		{"request-system-v3.jsonl", []at{{4, 2, CodeSystemForbidden}}},
		{"tool-error-without-is-error.jsonl", []at{{6, 4, CodeErrorWithoutIsError}}},
		// Open unions: unknown event types (with and without ignorable,
		// plugin: records), reason kinds, chunk and stream record types,
		// finish kinds, content blocks and source kinds are all tolerated.
		{"tolerated-v4.jsonl", nil},
		{"tolerated-v0.jsonl", nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			input := readTestdata(t, "hostile/"+tc.file)
			rep := checkBytes(t, input, Options{})
			assertViolations(t, rep.Violations, tc.want...)
			// Every line is still read: one row per line.
			if lines := strings.Count(string(input), "\n"); rep.Rows != lines {
				t.Errorf("%d rows for %d lines", rep.Rows, lines)
			}
			rows, _ := decodeAll(t, input, Options{})
			assertRowsMatchInput(t, input, rows)
		})
	}
}

// TestToleratedOpenUnions spells out what the tolerated files decode to:
// unknown members are kept raw, not dropped.
func TestToleratedOpenUnions(t *testing.T) {
	rows, _ := decodeAll(t, readTestdata(t, "hostile/tolerated-v4.jsonl"), Options{})
	if e := eventAt(t, rows, "", 0); e.Type != "acme/audit" || e.Ignorable || IsKnownType(e.Type) {
		t.Errorf("seq 0: %s ignorable %v", e.Type, e.Ignorable)
	}
	if e := eventAt(t, rows, "", 1); e.Type != "acme/heartbeat" || !e.Ignorable {
		t.Errorf("seq 1: %s ignorable %v", e.Type, e.Ignorable)
	}
	if e := eventAt(t, rows, "", 2); e.Type != "plugin:acme/trace.v2" {
		t.Errorf("seq 2: %s", e.Type)
	}
	if e := eventAt(t, rows, "", 5); e.SourceKind != "cron-notification" || e.Surface.Kind != SurfaceAppend {
		t.Errorf("seq 5: source %q", e.SourceKind)
	}
	if s := eventAt(t, rows, "", 7).Stream; s == nil || s.Records != 3 || s.Finish == nil || s.Finish.Kind != "content-filter" ||
		s.FirstTime != 1790000000007 || s.HasDelta {
		t.Errorf("seq 7 stream: %+v", s)
	}
	if s := eventAt(t, rows, "", 8).Stream; s == nil || s.Finish.Kind != "paused-by-provider" || s.Chunks != 2 {
		t.Errorf("seq 8 stream: %+v", s)
	}
	if e := eventAt(t, rows, "", 10); e.Reason.Kind != "suspended" {
		t.Errorf("seq 10 reason %q", e.Reason.Kind)
	}

	rows, _ = decodeAll(t, readTestdata(t, "hostile/tolerated-v0.jsonl"), Options{})
	if c := eventAt(t, rows, "", 4).Chunk; c == nil || c.Type != "citation-delta" || !c.HasIndex {
		t.Errorf("seq 4 chunk %+v", c)
	}
	if e := eventAt(t, rows, "", 9); e.Reason.Kind != "yielded" {
		t.Errorf("seq 9 reason %q", e.Reason.Kind)
	}
}

// TestUnsupportedVersion: a header version outside 0–4 is not a violation
// but a fatal *UnsupportedVersionError (a newer writer made the file).
func TestUnsupportedVersion(t *testing.T) {
	rep, err := Check(bytes.NewReader(readTestdata(t, "hostile/unsupported-version.jsonl")), Options{})
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) || uv.Line != 1 || uv.Version != "5" {
		t.Fatalf("Check error %v (%T), want *UnsupportedVersionError at line 1 for 5", err, err)
	}
	if rep != nil && len(rep.Violations) != 0 {
		t.Errorf("unsupported version reported as violations %v", rep.Violations)
	}
	for _, version := range []string{"6", "7", "-1", "100", `"4"`, "4.5"} {
		input := `{"type":"session","version":` + version + `,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n" +
			`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n"
		dec, err := NewDecoder(strings.NewReader(input), Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = dec.Next()
		if !errors.As(err, &uv) || uv.Version != version {
			t.Errorf("version %s: error %v, want *UnsupportedVersionError", version, err)
		}
		if _, err := dec.Next(); err == nil {
			t.Errorf("version %s: reading went on after the fatal error", version)
		}
		dec.Close()
	}
}

// nest builds a todo/write row whose data holds depth nested containers.
func nest(seq, depth int, open, close string) []byte {
	return []byte(fmt.Sprintf(`{"type":"todo/write","seq":%d,"time":1,"data":{"x":%s%s}}`,
		seq, strings.Repeat(open, depth), strings.Repeat(close, depth)))
}

// TestDeepNesting: a 200,000-deep row is JSON_TOO_DEEP, found without
// recursion, whatever MaxDepth asks for; the limit itself is exact.
func TestDeepNesting(t *testing.T) {
	for _, shape := range []struct{ open, close string }{{"[", "]"}, {`{"a":`, "}"}} {
		deep := nest(1, 200_000, shape.open, shape.close)
		input := []byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n" + string(deep) + "\n" +
			`{"type":"turn/end","seq":2,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}` + "\n")
		for _, maxDepth := range []int{0, 1 << 30} {
			rep := checkBytes(t, input, Options{MaxDepth: maxDepth})
			assertViolations(t, rep.Violations, at{2, -1, CodeJSONTooDeep})
		}
	}

	// The row object and data are two levels: 126 more make DefaultMaxDepth.
	d := NewRowDecoder(0, 0)
	if r, _ := d.Decode(nest(0, DefaultMaxDepth-2, "[", "]"), 1); len(r.Problems) != 0 || r.Kind != RowEvent {
		t.Errorf("depth %d: %v", DefaultMaxDepth, r.Problems)
	}
	if r, _ := d.Decode(nest(1, DefaultMaxDepth-1, "[", "]"), 2); len(r.Problems) != 1 || r.Problems[0].Code != CodeJSONTooDeep {
		t.Errorf("depth %d: %v", DefaultMaxDepth+1, r.Problems)
	}
}

// TestInvalidUTF8: bytes that are not UTF-8 make the row UTF8_INVALID (and
// the row keeps its raw bytes); reading goes on.
func TestInvalidUTF8(t *testing.T) {
	for name, bad := range map[string]string{
		"stray byte":      "\xff",
		"truncated rune":  "\xe2\x82",
		"overlong slash":  "\xc0\xaf",
		"UTF-16Surrogate": "\xed\xa0\x80",
	} {
		row := `{"type":"todo/write","seq":1,"time":1,"data":{"todos":[{"content":"caf` + bad + `","status":"pending"}]}}`
		input := `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n" + row + "\n" +
			`{"type":"turn/end","seq":2,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}` + "\n"
		t.Run(name, func(t *testing.T) {
			rep := checkBytes(t, []byte(input), Options{})
			assertViolations(t, rep.Violations, at{2, -1, CodeUTF8Invalid})
			rows, _ := decodeAll(t, []byte(input), Options{})
			if string(rows[1].Bytes) != row || rows[1].Kind != RowInvalid {
				t.Errorf("the invalid row: kind %v, bytes kept %v", rows[1].Kind, string(rows[1].Bytes) == row)
			}
		})
	}
}

// TestLosslessNumbers: the lossless-JSON rule of docs/format.md §4 on each number form.
func TestLosslessNumbers(t *testing.T) {
	for _, tc := range []struct {
		num  string
		lost bool
	}{
		{"0", false},
		{"-0", true},
		{"-0.0", true},
		{"-0e3", true},
		{"0.5", false},
		{"-12", false},
		{"9007199254740991", false},
		{"-9007199254740991", false},
		{"9007199254740992", true},
		{"-9007199254740992", true},
		{"123456789012345678901234567890", true},
		{"1e400", true},
		{"-1e400", true},
	} {
		b := []byte(`{"type":"request/context","seq":0,"time":1,"data":{"provider":"p","model":"m","contextWindow":` + tc.num + `}}`)
		r, err := NewRowDecoder(0, 0).Decode(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got []at
		for _, p := range r.Problems {
			got = append(got, at{p.Line, p.Seq, p.Code})
		}
		var want []at
		if tc.lost {
			want = []at{{1, 0, CodeNotLossless}}
		}
		if !slices.Equal(got, want) || r.Kind != RowEvent {
			t.Errorf("%s: problems %v kind %v, want %v", tc.num, got, r.Kind, want)
		}
	}
}

// TestPackedBadDt: a packed row whose dt holds something other than a safe
// integer is PACKED_ROW_INVALID at the member that time would belong to
// (the decoder used to run past the dt it had read and panic).
func TestPackedBadDt(t *testing.T) {
	for _, bad := range []string{"9007199254740992", "1.5", `"x"`, "null", "[1]"} {
		b := []byte(`{"type":"text-chunks","seq0":7,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[1,` + bad + `,2],"texts":["a","b","c","d"]}}`)
		r, err := NewRowDecoder(0, 0).Decode(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := []Violation{{Line: 1, Seq: 9, Code: CodePackedRowInvalid, Message: "dt[1] is not a safe integer"}}
		if r.Kind != RowInvalid || len(r.Events) != 0 || !slices.Equal(r.Problems[:min(1, len(r.Problems))], want) {
			t.Errorf("dt [1,%s,2]: kind %v, %d events, problems %v; want %v", bad, r.Kind, len(r.Events), r.Problems, want)
		}
	}
}

// TestPackedNonStringMember: a packed row member that is not a string is
// PACKED_ROW_INVALID at that member's seq, whatever dt holds (the decoder
// used to drop the members from there on and decode the rest when dt
// happened to fit them).
func TestPackedNonStringMember(t *testing.T) {
	for _, dt := range []string{"[]", "[1]", "[1,2]"} {
		b := []byte(`{"type":"text-chunks","seq0":7,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":` + dt + `,"texts":["a",2,"c"]}}`)
		r, err := NewRowDecoder(0, 0).Decode(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := []Violation{{Line: 1, Seq: 8, Code: CodePackedRowInvalid, Message: "texts member 1 is not a string"}}
		if r.Kind != RowInvalid || len(r.Events) != 0 || !slices.Equal(r.Problems, want) {
			t.Errorf("dt %s: kind %v, %d events, problems %v; want %v", dt, r.Kind, len(r.Events), r.Problems, want)
		}
	}
}

// TestHostileSources: sourceEventSeqs in every malformed shape is
// SOURCES_INVALID; a range that would expand to billions of seqs is
// refused without being expanded.
func TestHostileSources(t *testing.T) {
	for _, tc := range []struct {
		seq     string
		sources string
	}{
		{"5", `[5]`},         // not earlier than the event
		{"5", `[[2,6]]`},     // a range reaching the event
		{"5", `[3,1,3]`},     // a duplicate
		{"5", `[1,[2,3],2]`}, // ranged but not increasing
		{"5", `[[3,2]]`},     // an inverted range
		{"5", `[[1,2,3]]`},   // a range of three
		{"5", `["1"]`},       // not a number
		{"5", `[1.5]`},       // not an integer
		{"5", `{"0":1}`},     // not an array
		{"9007199254740990", `[[0,9007199254740989]]`}, // 2^53 seqs
		{"9007199254740990", `[[0,4503599627370495],[4503599627370496,9007199254740989]]`},
	} {
		b := []byte(`{"type":"user/message","seq":` + tc.seq + `,"time":1,"data":{"id":"u","role":"user","content":[],"source":{"kind":"user"}},"surfaceOp":"append","sourceEventSeqs":` + tc.sources + `}`)
		done := make(chan *Row, 1)
		go func() {
			r, _ := NewRowDecoder(0, 0).Decode(b, 1)
			done <- r
		}()
		select {
		case r := <-done:
			var codes []string
			for _, p := range r.Problems {
				codes = append(codes, p.Code)
			}
			if !slices.Equal(codes, []string{CodeSourcesInvalid}) || len(r.Events) != 1 {
				t.Errorf("%s: problems %v", tc.sources, codes)
			}
		case <-time.After(2 * time.Second): // it takes microseconds; fail before memory runs out
			t.Fatalf("%s: decoding did not finish; the range is being expanded", tc.sources)
		}
	}
}

// TestSourcesLimit: a citation list may expand to maxSourceSeqs seqs, not one more.
func TestSourcesLimit(t *testing.T) {
	for _, tc := range []struct {
		sources string
		ok      bool
	}{
		{fmt.Sprintf("[[0,%d]]", maxSourceSeqs-1), true},
		{fmt.Sprintf("[[0,%d]]", maxSourceSeqs), false},
		{fmt.Sprintf("[0,[1,%d]]", maxSourceSeqs), false},
	} {
		b := []byte(`{"type":"user/message","seq":` + fmt.Sprint(2*maxSourceSeqs) + `,"time":1,"data":{"id":"u","role":"user","content":[],"source":{"kind":"user"}},"surfaceOp":"append","sourceEventSeqs":` + tc.sources + `}`)
		r, _ := NewRowDecoder(0, 0).Decode(b, 1)
		e := &r.Events[0]
		if tc.ok && (len(r.Problems) != 0 || len(e.Sources) != maxSourceSeqs || !e.SourcesRanged) {
			t.Errorf("%s: problems %v, %d sources", tc.sources, r.Problems, len(e.Sources))
		}
		if !tc.ok && (len(r.Problems) != 1 || r.Problems[0].Code != CodeSourcesInvalid) {
			t.Errorf("%s: problems %v, want SOURCES_INVALID", tc.sources, r.Problems)
		}
	}
}

// TestWrapperInvalid: a line wrapper that names no session or carries no
// event object is WRAPPER_INVALID at its line.
func TestWrapperInvalid(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"session.event","params":{"event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}}`,
		`{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"s","event":[1]}}`,
		`{"method":"session.event"}`,
		`{"type":"session_event","sessionId":"s","event":"turn/start"}`,
		`{"type":"session_event","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}`,
		`{"sessionId":"s","event":42}`,
		`{"sessionId":7,"event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}`,
	} {
		rep := checkBytes(t, []byte(line+"\n"), Options{})
		if g := violationsAt(rep.Violations); !slices.Equal(g, []at{{1, -1, CodeWrapperInvalid}}) || rep.Events != 0 {
			t.Errorf("%s: %v", line, g)
		}
	}
}

// Only JSON's own whitespace makes a blank line: a row of other space
// characters is a bad row, reported, not skipped.
func TestNonJSONWhitespaceRow(t *testing.T) {
	for _, ws := range []string{"\v", "\f", "\u0085", "\u00a0"} {
		in := `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n" + ws + "\n"
		rep, err := Check(strings.NewReader(in), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Violations) != 1 || rep.Violations[0].Line != 2 || rep.Violations[0].Code != CodeJSONInvalid {
			t.Errorf("row %q: violations %v, want JSON_INVALID at line 2", ws, rep.Violations)
		}
	}
}
