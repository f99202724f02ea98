package sessionlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// readTestdata reads a file under the repository's testdata directory.
func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeAll reads every row of input, failing the test on a fatal error.
// The decoder is closed; its Format, Header and Tail stay readable.
func decodeAll(t *testing.T, input []byte, opts Options) ([]*Row, *Decoder) {
	t.Helper()
	dec, err := NewDecoder(bytes.NewReader(input), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var rows []*Row
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return rows, dec
		}
		if err != nil {
			t.Fatalf("row %d: %v", len(rows)+1, err)
		}
		rows = append(rows, row)
	}
}

// checkBytes runs Check over input, failing the test on a fatal error.
func checkBytes(t *testing.T, input []byte, opts Options) *Report {
	t.Helper()
	rep, err := Check(bytes.NewReader(input), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// eventAt finds the event with the given seq of the given session ("" for
// a file or a single-session stream).
func eventAt(t *testing.T, rows []*Row, session string, seq int64) *Event {
	t.Helper()
	for _, r := range rows {
		if session != "" && r.SessionID != session {
			continue
		}
		for i := range r.Events {
			if r.Events[i].Seq == seq {
				return &r.Events[i]
			}
		}
	}
	t.Fatalf("no event with seq %d (session %q)", seq, session)
	return nil
}

// seqRange is lo, lo+1, …, hi.
func seqRange(lo, hi int64) []int64 {
	var out []int64
	for n := lo; n <= hi; n++ {
		out = append(out, n)
	}
	return out
}

// assertRowsMatchInput checks what every file must give back: each row's
// Bytes are its input line exactly, Line and Offset locate that line, and
// a packed row's events all point at the one Row, in member order.
func assertRowsMatchInput(t *testing.T, input []byte, rows []*Row) {
	t.Helper()
	lines := bytes.SplitAfter(input, []byte("\n"))
	offsets := make([]int64, len(lines))
	for i := 1; i < len(lines); i++ {
		offsets[i] = offsets[i-1] + int64(len(lines[i-1]))
	}
	for _, r := range rows {
		if r.Line < 1 || r.Line > len(lines) {
			t.Fatalf("row line %d outside the input's %d lines", r.Line, len(lines))
		}
		want := bytes.TrimSuffix(lines[r.Line-1], []byte("\n"))
		if !bytes.Equal(r.Bytes, want) {
			t.Errorf("line %d: Row.Bytes differ from the input line\n got: %q\nwant: %q", r.Line, r.Bytes, want)
		}
		if r.Offset != offsets[r.Line-1] {
			t.Errorf("line %d: Row.Offset = %d, want %d", r.Line, r.Offset, offsets[r.Line-1])
		}
		for k := range r.Events {
			e := &r.Events[k]
			if e.Row != r || e.Member != k {
				t.Errorf("line %d: event %d has Row %p Member %d, want Row %p Member %d", r.Line, k, e.Row, e.Member, r, k)
			}
		}
	}
}

func headerFormat(v int) Format { return Format{Version: v, Known: true, FromHeader: true} }

// turn is the summary of turn n, opened at seq start.
func turn(n, start int64, reason string, steps int, calls ...string) TurnSummary {
	return TurnSummary{Turn: n, StartSeq: start, Reason: reason, Steps: steps, ToolCalls: append([]string{}, calls...)}
}

func sessionTurn(session string, n, start int64, reason string, steps int, calls ...string) TurnSummary {
	ts := turn(n, start, reason, steps, calls...)
	ts.Session = session
	return ts
}

// TestDialects decodes one hand-written log per dialect feature: each must
// check clean, be recognised as the right format, summarize to the right
// turns, and give the typed view the format reference describes.
func TestDialects(t *testing.T) {
	tests := []struct {
		file   string
		format Format
		rows   int
		events int
		turns  []TurnSummary
		open   []int64
		spot   func(t *testing.T, rows []*Row, dec *Decoder)
	}{
		{
			file: "dialects/v0-packed.jsonl", format: headerFormat(0), rows: 41, events: 51,
			turns: []TurnSummary{turn(1, 1, "completed", 2, "call_r1", "call_b2")},
			spot:  spotV0Packed,
		},
		{
			file: "dialects/v1-header.jsonl", format: headerFormat(1), rows: 15, events: 16,
			turns: []TurnSummary{turn(1, 3, "completed", 1)},
			spot: func(t *testing.T, rows []*Row, dec *Decoder) {
				h := dec.Header()
				want := Header{Version: 1, HasVersion: true, ID: "7d1e5c3b-4a2f-4e1d-b0c9-5a6b7c8d9e0f",
					CreatedAt: 1784000000000, Cwd: "/srv/work", ParentSession: "0f3c2a71-5d4e-4b8a-9c61-7e2f1a0b9d35",
					SeedLength: 2, HasSeedLength: true, Origin: "subagent", DelegationDepth: 1, AgentPreset: "explorer"}
				if h == nil || *h != want {
					t.Errorf("header = %+v, want %+v", h, want)
				}
				row := eventAt(t, rows, "", 8).Row
				assertPacked(t, row, "text-delta", seqRange(8, 10), []int64{1784000000503, 1784000000510, 1784000000516})
				if m := eventAt(t, rows, "", 13); !slices.Equal(m.Sources, seqRange(7, 12)) || m.Usage == nil || m.Usage.OutputTokens != 3 {
					t.Errorf("assistant/message sources %v usage %+v", m.Sources, m.Usage)
				}
			},
		},
		{
			file: "dialects/v2-stream.jsonl", format: headerFormat(2), rows: 28, events: 27,
			turns: []TurnSummary{turn(1, 0, "completed", 2, "call_g1"), turn(2, 21, "completed", 1)},
			spot:  spotV2Stream,
		},
		{
			file: "dialects/v3-system.jsonl", format: headerFormat(3), rows: 17, events: 16,
			turns: []TurnSummary{turn(1, 1, "completed", 2, "call_t1")},
			spot:  spotV3System,
		},
		{
			file: "dialects/v4-tools.jsonl", format: headerFormat(4), rows: 26, events: 25,
			turns: []TurnSummary{turn(1, 4, "completed", 2, "call_1", "call_2")},
			spot:  spotV4Tools,
		},
		{
			file: "dialects/v4-forked.jsonl", format: headerFormat(4), rows: 22, events: 21,
			turns: []TurnSummary{turn(1, 0, "completed", 1), turn(2, 8, "forked", 1), turn(3, 14, "completed", 1)},
			spot: func(t *testing.T, rows []*Row, dec *Decoder) {
				if h := dec.Header(); !h.IsSeeded || !h.HasIsSeeded || h.ParentSession == "" {
					t.Errorf("header isSeeded/parentSession: %+v", h)
				}
				if e := eventAt(t, rows, "", 11); e.Type != "session/end-seed" || !e.Inherited {
					t.Errorf("seq 11 = %s inherited=%v, want the tagged session/end-seed", e.Type, e.Inherited)
				}
				if e := eventAt(t, rows, "", 13); e.Reason.Kind != "forked" {
					t.Errorf("turn/end reason = %q, want forked", e.Reason.Kind)
				}
			},
		},
		{
			file: "dialects/crash-repaired.jsonl", format: headerFormat(0), rows: 28, events: 29,
			turns: []TurnSummary{turn(1, 0, "interrupted", 1, "call_w"), turn(2, 18, "completed", 1)},
			spot:  spotCrashRepaired,
		},
		{
			file: "dialects/open-turn.jsonl", format: headerFormat(4), rows: 13, events: 12,
			turns: []TurnSummary{turn(1, 0, "completed", 1), turn(2, 7, "dangling", 1, "call_s")},
			open:  []int64{2},
			spot: func(t *testing.T, rows []*Row, dec *Decoder) {
				v := NewValidator()
				for _, r := range rows {
					if got := v.Row(r, dec.Format()); len(got) != 0 {
						t.Errorf("line %d: %v", r.Line, got)
					}
				}
				if v.OpenTurn() != 2 || v.OpenStep() != 1 {
					t.Errorf("open turn/step = %d/%d, want 2/1", v.OpenTurn(), v.OpenStep())
				}
				if got := v.Finish(dec.Format()); len(got) != 0 {
					t.Errorf("an open turn at the end is not a violation, got %v", got)
				}
				if e := eventAt(t, rows, "", 2); e.Type != "system/message" || !e.ContentEmpty {
					t.Errorf("seq 2 %s ContentEmpty=%v, want an empty system/message", e.Type, e.ContentEmpty)
				}
			},
		},
		{
			file: "dialects/wrap-jsonrpc.jsonl", format: Format{Version: 4, Known: true}, rows: 22, events: 16,
			turns: []TurnSummary{
				sessionTurn("sess-parent", 1, 4, "completed", 1, "call_sub"),
				sessionTurn("sess-child", 1, 0, "completed", 1),
			},
			spot: spotWrapJSONRPC,
		},
		{
			file: "dialects/wrap-streamjson.jsonl", format: Format{Version: 0, Known: true}, rows: 14, events: 13,
			turns: []TurnSummary{sessionTurn("hl-7f3a", 1, 0, "completed", 1)},
			spot: func(t *testing.T, rows []*Row, _ *Decoder) {
				for _, r := range rows[:13] {
					if r.Kind != RowEvent || r.Wrapper != WrapStreamJSON || r.Method != "session_event" || r.SessionID != "hl-7f3a" {
						t.Errorf("line %d: kind %v wrapper %v method %q session %q", r.Line, r.Kind, r.Wrapper, r.Method, r.SessionID)
					}
				}
				if r := rows[13]; r.Kind != RowOther || r.Wrapper != WrapStreamJSON || r.Method != "result" || r.SessionID != "hl-7f3a" || len(r.Events) != 0 {
					t.Errorf("result line: kind %v wrapper %v method %q session %q", r.Kind, r.Wrapper, r.Method, r.SessionID)
				}
				if e := eventAt(t, rows, "hl-7f3a", 5); e.Chunk == nil || e.Chunk.Type != "text-delta" || e.Chunk.DeltaBytes != 3 {
					t.Errorf("seq 5 chunk = %+v", e.Chunk)
				}
			},
		},
		{
			file: "dialects/wrap-envelope.jsonl", format: Format{Version: 3, Known: true}, rows: 7, events: 7,
			turns: []TurnSummary{sessionTurn("env-42", 1, 0, "completed", 1)},
			spot: func(t *testing.T, rows []*Row, _ *Decoder) {
				for _, r := range rows {
					if r.Kind != RowEvent || r.Wrapper != WrapEnvelope || r.SessionID != "env-42" {
						t.Errorf("line %d: kind %v wrapper %v session %q", r.Line, r.Kind, r.Wrapper, r.SessionID)
					}
				}
				if s := eventAt(t, rows, "env-42", 4).Stream; s == nil || s.Chunks != 3 || s.FirstDeltaTime != 1787500000080 {
					t.Errorf("stream = %+v", s)
				}
			},
		},
		{
			file: "seed/sample.jsonl", format: Format{Version: 0, Known: true, Seed: true}, rows: 10, events: 10,
			turns: []TurnSummary{turn(1, 0, "completed", 1, "call_1")},
			spot:  spotSeedSample,
		},
		{
			file: "dialects/seed-bare-reason.jsonl", format: Format{Version: 0, Known: true, Seed: true}, rows: 9, events: 9,
			turns: []TurnSummary{turn(1, 0, "completed", 1, "call_9")},
			spot: func(t *testing.T, rows []*Row, _ *Decoder) {
				if e := eventAt(t, rows, "", 8); e.Reason.Kind != "completed" {
					t.Errorf("bare-string reason decoded as %q", e.Reason.Kind)
				}
				if e := eventAt(t, rows, "", 6); e.CallID != "" || e.ToolName != "bash" || e.HasSources {
					t.Errorf("seed tool/result: CallID %q ToolName %q HasSources %v", e.CallID, e.ToolName, e.HasSources)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			input := readTestdata(t, tc.file)
			rep := checkBytes(t, input, Options{})
			for _, v := range rep.Violations {
				t.Errorf("violation: line %d %v", v.Line, v)
			}
			if rep.Format != tc.format {
				t.Errorf("format = %+v, want %+v", rep.Format, tc.format)
			}
			if rep.Rows != tc.rows || rep.Events != tc.events {
				t.Errorf("rows/events = %d/%d, want %d/%d", rep.Rows, rep.Events, tc.rows, tc.events)
			}
			if !reflect.DeepEqual(rep.Turns, tc.turns) {
				t.Errorf("turns = %+v\nwant %+v", rep.Turns, tc.turns)
			}
			if !slices.Equal(rep.DanglingTurns, tc.open) {
				t.Errorf("open turns = %v, want %v", rep.DanglingTurns, tc.open)
			}
			if rep.Tail != nil {
				t.Errorf("unexpected torn tail %v", rep.Tail)
			}
			if (rep.Header != nil) != tc.format.FromHeader {
				t.Errorf("header = %+v, want one iff the format came from a header", rep.Header)
			}

			rows, dec := decodeAll(t, input, Options{})
			assertRowsMatchInput(t, input, rows)
			if tc.spot != nil {
				tc.spot(t, rows, dec)
			}
		})
	}
}

// assertPacked checks a packed row's expansion (docs/format.md §5.1): its members' seqs,
// times and chunk type, all sharing the row.
func assertPacked(t *testing.T, row *Row, chunkType string, seqs, times []int64) {
	t.Helper()
	if row.Kind != RowPacked {
		t.Fatalf("line %d: kind %v, want packed", row.Line, row.Kind)
	}
	var gotSeqs, gotTimes []int64
	for k := range row.Events {
		e := &row.Events[k]
		gotSeqs = append(gotSeqs, e.Seq)
		gotTimes = append(gotTimes, e.Time)
		if e.Type != "assistant/chunk" || e.Chunk == nil || e.Chunk.Type != chunkType || !e.Chunk.HasIndex {
			t.Errorf("line %d member %d: %s chunk %+v, want an assistant/chunk %s with an index", row.Line, k, e.Type, e.Chunk, chunkType)
		}
		if e.Row != row || e.Member != k {
			t.Errorf("line %d member %d does not point back at its row", row.Line, k)
		}
	}
	if !slices.Equal(gotSeqs, seqs) || !slices.Equal(gotTimes, times) {
		t.Errorf("line %d: seqs %v times %v, want %v %v", row.Line, gotSeqs, gotTimes, seqs, times)
	}
}

func spotV0Packed(t *testing.T, rows []*Row, dec *Decoder) {
	h := dec.Header()
	if h == nil || h.Version != 0 || !h.HasVersion || h.ID != "0f3c2a71-5d4e-4b8a-9c61-7e2f1a0b9d35" || h.CreatedAt != 1783352050748 || h.Cwd != "/home/alice/app" {
		t.Errorf("header = %+v", h)
	}

	// The docs/format.md §5.1 example row: seq0 10, time0 …618, dt [0,26,-3].
	row := eventAt(t, rows, "", 10).Row
	if row.Line != 12 {
		t.Errorf("reasoning-chunks row on line %d, want 12", row.Line)
	}
	assertPacked(t, row, "reasoning-delta", seqRange(10, 13),
		[]int64{1783352051618, 1783352051618, 1783352051644, 1783352051641})
	var sizes []int
	for _, e := range row.Events {
		sizes = append(sizes, e.Chunk.DeltaBytes)
		if e.Turn != 1 || e.Step != 1 || !e.HasTurn || !e.HasStep || e.Chunk.Index != 0 {
			t.Errorf("seq %d: turn %d step %d index %d", e.Seq, e.Turn, e.Step, e.Chunk.Index)
		}
	}
	if !slices.Equal(sizes, []int{3, 5, 6, 2}) { // "The", " user", " wants", " X"
		t.Errorf("delta sizes %v", sizes)
	}
	// The next record continues at seq 14, a loose chunk of the same run.
	if e := eventAt(t, rows, "", 14); e.Row.Kind != RowEvent || e.Chunk.Type != "reasoning-delta" {
		t.Errorf("seq 14: %v %+v", e.Row.Kind, e.Chunk)
	}

	// A text run with a negative gap.
	assertPacked(t, eventAt(t, rows, "", 17).Row, "text-delta", seqRange(17, 19),
		[]int64{1783352051655, 1783352051659, 1783352051658})

	// Tool-call runs: with name on every member, and without (the name came
	// on the loose first delta, seq 27).
	withName := eventAt(t, rows, "", 22).Row
	assertPacked(t, withName, "tool-call-delta", seqRange(22, 24), []int64{1783352051662, 1783352051665, 1783352051667})
	for _, e := range withName.Events {
		if e.Chunk.ID != "call_r1" || e.Chunk.Name != "read_file" || e.Chunk.Index != 2 {
			t.Errorf("seq %d: chunk %+v", e.Seq, e.Chunk)
		}
	}
	if e := eventAt(t, rows, "", 27); e.Chunk.ID != "call_b2" || e.Chunk.Name != "bash" || e.Chunk.DeltaBytes != 0 {
		t.Errorf("seq 27: chunk %+v", e.Chunk)
	}
	noName := eventAt(t, rows, "", 28).Row
	assertPacked(t, noName, "tool-call-delta", seqRange(28, 30), []int64{1783352051671, 1783352051672, 1783352051673})
	for _, e := range noName.Events {
		if e.Chunk.ID != "call_b2" || e.Chunk.Name != "" {
			t.Errorf("seq %d: chunk %+v, want id call_b2 and no name", e.Seq, e.Chunk)
		}
	}

	if c := eventAt(t, rows, "", 32).Chunk; c.Type != "usage" || c.Usage == nil ||
		*c.Usage != (Usage{InputTokens: 812, OutputTokens: 41, CacheReadTokens: 256, ReasoningTokens: 6}) {
		t.Errorf("usage chunk = %+v", c)
	}
	if c := eventAt(t, rows, "", 33).Chunk; c.Type != "finish" || c.Finish == nil || c.Finish.Kind != "tool-calls" {
		t.Errorf("finish chunk = %+v", c)
	}

	m := eventAt(t, rows, "", 34)
	if !slices.Equal(m.Sources, seqRange(9, 33)) || m.SourcesRanged || m.Surface.Kind != SurfaceAppend {
		t.Errorf("assistant/message sources %v ranged %v surface %+v", m.Sources, m.SourcesRanged, m.Surface)
	}
	wantCalls := []ToolCallRef{
		{ID: "call_r1", Name: "read_file", Arguments: `{"path":"go.mod"}`},
		{ID: "call_b2", Name: "bash", Arguments: `{"command":"ls -a"}`},
	}
	if !slices.Equal(m.Advertised, wantCalls) {
		t.Errorf("advertised %+v", m.Advertised)
	}
	if m.Provider != "deepseek-official" || m.Model != "deepseek-v4-flash" || m.SourceKind != "model" || m.Role != "assistant" {
		t.Errorf("message identity %q %q %q %q", m.Provider, m.Model, m.SourceKind, m.Role)
	}

	// User-role tool results carrying a tool-result block (v0–v3).
	ok, failed := eventAt(t, rows, "", 37), eventAt(t, rows, "", 38)
	if ok.CallID != "call_r1" || ok.IsError || ok.Role != "user" || ok.ErrorCode != "" || !slices.Equal(ok.Sources, []int64{35}) {
		t.Errorf("seq 37: call %q error %v role %q code %q sources %v", ok.CallID, ok.IsError, ok.Role, ok.ErrorCode, ok.Sources)
	}
	if failed.CallID != "call_b2" || !failed.IsError || failed.ErrorCode != "COMMAND_FAILED" {
		t.Errorf("seq 38: call %q error %v code %q", failed.CallID, failed.IsError, failed.ErrorCode)
	}
	if u := eventAt(t, rows, "", 5); u.SourceKind != "plugin" || u.MessageID == "" {
		t.Errorf("runtime-context user/message: source %q id %q", u.SourceKind, u.MessageID)
	}
}

func spotV2Stream(t *testing.T, rows []*Row, _ *Decoder) {
	// A failed attempt: one finish chunk, no delta.
	a := eventAt(t, rows, "", 5)
	wantAttempt := Stream{Records: 1, Chunks: 1, FirstTime: 1786000000150, LastTime: 1786000000150, HasTimes: true,
		Finish: &Finish{Kind: "error", Failure: &Failure{Code: "SERVICE_UNAVAILABLE", Message: "upstream overloaded", Status: 503}}}
	if a.Type != "assistant/attempt" || a.Stream == nil || !reflect.DeepEqual(*a.Stream, wantAttempt) {
		t.Errorf("attempt stream = %+v", a.Stream)
	}
	if r := eventAt(t, rows, "", 6); r.Retry != 1 || r.Provider != "deepseek-official" || r.Failure == nil || r.Failure.Code != "SERVICE_UNAVAILABLE" {
		t.Errorf("llm/retry: retry %d provider %q failure %+v", r.Retry, r.Provider, r.Failure)
	}

	// The committed attempt: the first member of the reasoning run is empty,
	// so the first delta is member 1 at time0+5; dt -2 makes member 2 earlier.
	m := eventAt(t, rows, "", 9)
	wantStream := Stream{Records: 8, Chunks: 11, FirstTime: 1786000000700, LastTime: 1786000000716, HasTimes: true,
		FirstDeltaTime: 1786000000707, HasDelta: true,
		Usage:  &Usage{InputTokens: 310, OutputTokens: 22, ReasoningTokens: 4},
		Finish: &Finish{Kind: "tool-calls"}}
	if m.Stream == nil || !reflect.DeepEqual(*m.Stream, wantStream) {
		t.Errorf("message stream = %+v\nwant %+v", m.Stream, wantStream)
	}
	if m.Usage == nil || *m.Usage != *wantStream.Usage || m.HasSources {
		t.Errorf("message usage %+v sources %v", m.Usage, m.HasSources)
	}
	if !slices.Equal(m.Advertised, []ToolCallRef{{ID: "call_g1", Name: "grep", Arguments: `{"pattern":"maxRetries"}`}}) {
		t.Errorf("advertised %+v", m.Advertised)
	}

	// A single-member run (dt: []).
	if s := eventAt(t, rows, "", 14).Stream; s == nil || s.Chunks != 5 || s.FirstDeltaTime != 1786000000803 || s.Finish.Kind != "stop" {
		t.Errorf("single-member stream = %+v", s)
	}
	// No usage anywhere: the provider supplied none.
	if e := eventAt(t, rows, "", 24); e.Usage != nil || e.Stream.Usage != nil {
		t.Errorf("seq 24 usage %+v / %+v, want none", e.Usage, e.Stream.Usage)
	}

	// The compaction replace: start/end keys, range-encoded citations.
	r := eventAt(t, rows, "", 19)
	if r.Surface != (SurfaceOp{Kind: SurfaceReplace, Start: 4, End: 14}) {
		t.Errorf("surfaceOp = %+v", r.Surface)
	}
	if !slices.Equal(r.Sources, []int64{4, 9, 10, 11, 14, 17, 18}) || !r.SourcesRanged || !r.HasSources {
		t.Errorf("sources %v ranged %v", r.Sources, r.SourcesRanged)
	}
	next, code, msg := ApplyReplace([]int64{4, 9, 11, 14}, r)
	if code != "" || !slices.Equal(next, []int64{19}) {
		t.Errorf("ApplyReplace = %v %s %s", next, code, msg)
	}
	if e := eventAt(t, rows, "", 11); e.CallID != "call_g1" || e.IsError {
		t.Errorf("tool/result call %q error %v", e.CallID, e.IsError)
	}
}

func spotV3System(t *testing.T, rows []*Row, _ *Decoder) {
	s := eventAt(t, rows, "", 3)
	if s.Role != "system" || s.SourceKind != "system-prompt" || s.Surface.Kind != SurfaceAppend || s.ContentEmpty {
		t.Errorf("system/message: role %q source %q surface %+v", s.Role, s.SourceKind, s.Surface)
	}
	r := eventAt(t, rows, "", 12)
	if r.Surface != (SurfaceOp{Kind: SurfaceReplace, Start: 3, End: 3, SeqKeys: true}) || !slices.Equal(r.Sources, []int64{3}) || r.SourcesRanged {
		t.Errorf("replacing system/message: surface %+v sources %v", r.Surface, r.Sources)
	}
	next, code, _ := ApplyReplace([]int64{3, 4, 7, 9}, r)
	if code != "" || !slices.Equal(next, []int64{12, 4, 7, 9}) {
		t.Errorf("ApplyReplace = %v %s", next, code)
	}
	if m := eventAt(t, rows, "", 7); m.HasSources || m.Stream == nil || m.Stream.FirstDeltaTime != 1787000000210 {
		t.Errorf("v3 assistant/message: sources %v stream %+v", m.HasSources, m.Stream)
	}
	// A tool-result block without isError is not an error.
	if e := eventAt(t, rows, "", 9); e.CallID != "call_t1" || e.IsError {
		t.Errorf("tool/result call %q error %v", e.CallID, e.IsError)
	}
}

func spotV4Tools(t *testing.T, rows []*Row, _ *Decoder) {
	d := eventAt(t, rows, "", 11)
	if d.Type != "developer/message" || d.Role != "developer" || d.SourceKind != "tool-registry" || d.Surface.Kind != SurfaceAppend {
		t.Errorf("developer/message: %s role %q source %q", d.Type, d.Role, d.SourceKind)
	}
	ok, denied := eventAt(t, rows, "", 16), eventAt(t, rows, "", 17)
	if ok.Role != "tool" || ok.CallID != "call_1" || ok.IsError || ok.ErrorCode != "" {
		t.Errorf("seq 16: role %q call %q error %v code %q", ok.Role, ok.CallID, ok.IsError, ok.ErrorCode)
	}
	if denied.Role != "tool" || denied.CallID != "call_2" || !denied.IsError || denied.ErrorCode != "AUTO_REVIEW_DENIED" {
		t.Errorf("seq 17: role %q call %q error %v code %q", denied.Role, denied.CallID, denied.IsError, denied.ErrorCode)
	}
	m := eventAt(t, rows, "", 13)
	if m.Usage == nil || m.Usage.TotalTokens != 1260 || len(m.Advertised) != 2 || m.Stream.Records != 11 || m.Stream.Chunks != 13 {
		t.Errorf("assistant/message usage %+v advertised %d stream %+v", m.Usage, len(m.Advertised), m.Stream)
	}
	if c := eventAt(t, rows, "", 10); c.Provider != "deepseek-official" || c.Model != "deepseek-v4-flash" {
		t.Errorf("request/context %q %q", c.Provider, c.Model)
	}
}

func spotCrashRepaired(t *testing.T, rows []*Row, _ *Decoder) {
	lastReal := eventAt(t, rows, "", 12)
	unknown, notStarted := eventAt(t, rows, "", 13), eventAt(t, rows, "", 14)
	for _, e := range []*Event{unknown, notStarted} {
		if !e.SyntheticResult || !e.IsError || e.MessageID != fmt.Sprintf("interrupted-tool-result-%s-%d", e.CallID, e.Seq) {
			t.Errorf("seq %d: synthetic %v error %v id %q", e.Seq, e.SyntheticResult, e.IsError, e.MessageID)
		}
	}
	if unknown.CallID != "call_w" || unknown.ErrorCode != "TOOL_OUTCOME_UNKNOWN" || !slices.Equal(unknown.Sources, []int64{lastReal.Seq}) {
		t.Errorf("outcome-unknown result: call %q code %q sources %v", unknown.CallID, unknown.ErrorCode, unknown.Sources)
	}
	if notStarted.CallID != "call_n" || notStarted.ErrorCode != "TOOL_NOT_STARTED" || notStarted.HasSources {
		t.Errorf("not-started result: call %q code %q sources %v", notStarted.CallID, notStarted.ErrorCode, notStarted.HasSources)
	}
	// Every synthetic closer reuses the last real event's time.
	for seq := int64(13); seq <= 16; seq++ {
		if e := eventAt(t, rows, "", seq); e.Time != lastReal.Time {
			t.Errorf("seq %d (%s) time %d, want %d", seq, e.Type, e.Time, lastReal.Time)
		}
	}
	if e := eventAt(t, rows, "", 16); e.Reason.Kind != "interrupted" {
		t.Errorf("turn/end reason %q", e.Reason.Kind)
	}
	if e := eventAt(t, rows, "", 17); e.Type != "session/end-seed" || e.Inherited {
		t.Errorf("seq 17 %s inherited %v, want an untagged resume marker", e.Type, e.Inherited)
	}
}

func spotWrapJSONRPC(t *testing.T, rows []*Row, _ *Decoder) {
	type rowWant struct {
		line    int
		kind    RowKind
		method  string
		session string
	}
	for _, w := range []rowWant{
		{1, RowOther, "", ""}, // a response
		{2, RowEvent, "session.event", "sess-parent"},
		{3, RowOther, "session.status", "sess-parent"},
		{4, RowEvent, "session.event", "sess-parent"}, // no "jsonrpc" member
		{10, RowOther, "subagent.started", ""},
		{11, RowEvent, "session.event", "sess-child"},
		{14, RowOther, "session.status", "sess-child"},
		{18, RowOther, "subagent.finished", ""},
		{22, RowOther, "session.status", "sess-parent"}, // no "jsonrpc" member
	} {
		r := rows[w.line-1]
		if r.Line != w.line || r.Kind != w.kind || r.Wrapper != WrapJSONRPC || r.Method != w.method || r.SessionID != w.session {
			t.Errorf("line %d: kind %v wrapper %v method %q session %q, want %v %q %q", r.Line, r.Kind, r.Wrapper, r.Method, r.SessionID, w.kind, w.method, w.session)
		}
	}
	// Each session keeps its own seqs: the parent was joined late at seq 3.
	seqs := map[string][]int64{}
	for _, r := range rows {
		for _, e := range r.Events {
			seqs[r.SessionID] = append(seqs[r.SessionID], e.Seq)
		}
	}
	if !slices.Equal(seqs["sess-parent"], seqRange(3, 12)) || !slices.Equal(seqs["sess-child"], seqRange(0, 5)) {
		t.Errorf("per-session seqs %v", seqs)
	}
	if e := eventAt(t, rows, "sess-parent", 10); e.Role != "tool" || e.CallID != "call_sub" || e.IsError {
		t.Errorf("parent tool/result role %q call %q error %v", e.Role, e.CallID, e.IsError)
	}
}

func spotSeedSample(t *testing.T, rows []*Row, dec *Decoder) {
	if dec.Header() != nil {
		t.Errorf("the seed sample has no header, got %+v", dec.Header())
	}
	if f := dec.Format(); f.String() != "seed" || f.RulesVersion() != 0 {
		t.Errorf("format %q rules v%d", f, f.RulesVersion())
	}
	// Seed deltas carry no index; the tool delta's text is in "arguments".
	if c := eventAt(t, rows, "", 4).Chunk; c.Type != "tool-call-delta" || c.HasIndex || c.Name != "bash" || c.DeltaBytes != len(`{"command":"grep runoob README.md"}`) {
		t.Errorf("seed tool delta = %+v", c)
	}
	m := eventAt(t, rows, "", 5)
	if !slices.Equal(m.Advertised, []ToolCallRef{{ID: "call_1", Name: "bash", Arguments: `{"command":"grep runoob README.md"}`}}) {
		t.Errorf("tool_use block decoded as %+v", m.Advertised)
	}
	if m.Usage == nil || *m.Usage != (Usage{InputTokens: 12, OutputTokens: 4}) {
		t.Errorf("usage %+v", m.Usage)
	}
	call, result := eventAt(t, rows, "", 6), eventAt(t, rows, "", 7)
	if call.CallID != "call_1" {
		t.Fatalf("tool/call callId %q", call.CallID)
	}
	// The result names no call: only its sourceEventSeqs lead to call_1.
	if result.CallID != "" || result.ToolName != "bash" || !slices.Equal(result.Sources, []int64{6}) {
		t.Fatalf("tool/result CallID %q ToolName %q Sources %v", result.CallID, result.ToolName, result.Sources)
	}
	// An older pending call of the same tool would win by name; the
	// citation must win first.
	var pending turnmodel.Calls
	pending.Add("call_0", "bash", 3, 1)
	pending.Add("call_1", "bash", 6, 1)
	if i := pending.Find(result.ToolResult(Format{Seed: true}, 1)); i != 1 {
		t.Errorf("the pairing picked %d, want 1 (call_1 via sourceEventSeqs)", i)
	}
}
