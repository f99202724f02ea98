package sessionlog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// zstdFrames compresses input the way dsh writes a .jsonl.zstd file (docs/format.md §2.4):
// the header line alone in frame 1, then one frame per batch of up to
// perFrame lines. It returns the file and the end offset of every frame.
func zstdFrames(t *testing.T, input []byte, perFrame int) ([]byte, []int) {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	lines := bytes.SplitAfter(input, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	var out []byte
	var ends []int
	flush := func(batch [][]byte) {
		out = enc.EncodeAll(bytes.Join(batch, nil), out)
		ends = append(ends, len(out))
	}
	flush(lines[:1])
	for i := 1; i < len(lines); i += perFrame {
		flush(lines[i:min(i+perFrame, len(lines))])
	}
	return out, ends
}

// rowShape is what must be identical between a plain and a zstd reading.
type rowShape struct {
	Line    int
	Offset  int64
	Bytes   string
	Kind    RowKind
	Seqs    string
	Problem string
}

func shapes(rows []*Row) []rowShape {
	out := make([]rowShape, len(rows))
	for i, r := range rows {
		var seqs []string
		for _, e := range r.Events {
			seqs = append(seqs, fmt.Sprint(e.Seq))
		}
		var probs []string
		for _, p := range r.Problems {
			probs = append(probs, p.Code)
		}
		out[i] = rowShape{r.Line, r.Offset, string(r.Bytes), r.Kind, strings.Join(seqs, ","), strings.Join(probs, ",")}
	}
	return out
}

func assertSameRows(t *testing.T, got, want []*Row) {
	t.Helper()
	g, w := shapes(got), shapes(want)
	if len(g) != len(w) {
		t.Fatalf("%d rows, want %d", len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, g[i], w[i])
		}
	}
}

// TestZstdMatchesPlain: a multi-frame zstd file decodes to exactly the rows
// of its plain encoding, whatever the batching.
func TestZstdMatchesPlain(t *testing.T) {
	for _, file := range []string{"dialects/v0-packed.jsonl", "dialects/v2-stream.jsonl", "dialects/v4-tools.jsonl", "dialects/crash-repaired.jsonl"} {
		plain := readTestdata(t, file)
		want, plainDec := decodeAll(t, plain, Options{})
		for _, perFrame := range []int{1, 3, 1000} {
			t.Run(fmt.Sprintf("%s/%d-per-frame", file, perFrame), func(t *testing.T) {
				z, ends := zstdFrames(t, plain, perFrame)
				if perFrame == 3 && len(ends) < 3 {
					t.Fatalf("only %d frames", len(ends))
				}
				got, dec := decodeAll(t, z, Options{})
				if !dec.Compressed() {
					t.Fatal("zstd input not detected")
				}
				assertSameRows(t, got, want)
				if dec.Tail() != nil || dec.Format() != plainDec.Format() {
					t.Errorf("tail %v format %+v, want none and %+v", dec.Tail(), dec.Format(), plainDec.Format())
				}
				rep := checkBytes(t, z, Options{})
				if len(rep.Violations) != 0 || rep.Events != countEvents(want) {
					t.Errorf("Check: %d events, violations %v", rep.Events, rep.Violations)
				}
			})
		}
	}
}

func countEvents(rows []*Row) int {
	n := 0
	for _, r := range rows {
		n += len(r.Events)
	}
	return n
}

// TestZstdTornFinalFrame cuts the file at every byte inside its final frame:
// the rows of the complete frames are all returned, the cut frame is a torn
// tail (Frame true) and nothing is an error.
func TestZstdTornFinalFrame(t *testing.T) {
	plain := readTestdata(t, "dialects/v2-stream.jsonl")
	z, ends := zstdFrames(t, plain, 4)
	all, _ := decodeAll(t, plain, Options{})
	last := ends[len(ends)-2] // the final frame starts here
	// The rows of the complete frames: those that start before the final
	// frame's plain bytes.
	finalStart := int64(len(plain) - sumLastFrame(plain, 4))
	complete := 0
	for _, r := range all {
		if r.Offset < finalStart {
			complete++
		}
	}
	if complete == 0 || complete == len(all) {
		t.Fatalf("%d of %d rows before the final frame", complete, len(all))
	}
	for cut := last + 1; cut < len(z); cut++ {
		dec, err := NewDecoder(bytes.NewReader(z[:cut]), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var rows []*Row
		for {
			r, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("cut at %d of %d: error %v, want a torn tail", cut, len(z), err)
			}
			rows = append(rows, r)
		}
		dec.Close()
		tail := dec.Tail()
		if tail == nil || !tail.Frame {
			t.Fatalf("cut at %d of %d: tail %v, want an incomplete frame", cut, len(z), tail)
		}
		if len(rows) != complete || tail.Line != complete+1 {
			t.Fatalf("cut at %d: %d rows and tail at line %d, want %d rows and line %d", cut, len(rows), tail.Line, complete, complete+1)
		}
		assertSameRows(t, rows, all[:complete])
	}
}

// TestZstdTornLargeFrame cuts a frame of several zstd blocks at various
// points: whatever the cut, the rows returned are a prefix of the plain
// rows and the rest is a torn frame, never an error.
func TestZstdTornLargeFrame(t *testing.T) {
	plain := readTestdata(t, "dialects/v0-packed.jsonl")
	header, body, _ := bytes.Cut(plain, []byte("\n"))                  // body keeps its final newline
	big := slices.Concat(header, []byte("\n"), bytes.Repeat(body, 40)) // ~350 KiB in one frame
	z, ends := zstdFrames(t, big, 1<<30)
	if len(ends) != 2 || len(big)-ends[0] < 256<<10 {
		t.Fatalf("frames %v for %d bytes", ends, len(big))
	}
	all, _ := decodeAll(t, big, Options{})
	for _, cut := range []int{ends[0] + 1, ends[0] + 100, (ends[0] + len(z)) / 2, len(z) - 500, len(z) - 4, len(z) - 1} {
		dec, err := NewDecoder(bytes.NewReader(z[:cut]), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var rows []*Row
		for {
			r, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("cut at %d of %d: %v", cut, len(z), err)
			}
			rows = append(rows, r)
		}
		dec.Close()
		if tail := dec.Tail(); tail == nil || !tail.Frame || tail.Line != len(rows)+1 || len(rows) < 1 || len(rows) >= len(all) {
			t.Fatalf("cut at %d: %d rows, tail %v", cut, len(rows), tail)
		}
		assertSameRows(t, rows, all[:len(rows)])
	}
}

// sumLastFrame is the number of plain bytes in the final frame zstdFrames
// makes with perFrame lines per frame.
func sumLastFrame(plain []byte, perFrame int) int {
	lines := bytes.SplitAfter(plain, []byte("\n"))
	lines = lines[:len(lines)-1]
	n := (len(lines) - 1) % perFrame
	if n == 0 {
		n = perFrame
	}
	size := 0
	for _, l := range lines[len(lines)-n:] {
		size += len(l)
	}
	return size
}

// TestZstdCorruptChecksum: a frame whose content checksum does not match
// is corruption, a fatal *CorruptError, not a torn tail.
func TestZstdCorruptChecksum(t *testing.T) {
	plain := readTestdata(t, "dialects/v2-stream.jsonl")
	z, ends := zstdFrames(t, plain, 4)
	for _, frame := range []int{1, len(ends) - 1} { // a middle frame and the final one
		bad := bytes.Clone(z)
		bad[ends[frame]-1] ^= 0xFF // the last byte of the frame's 4-byte checksum
		dec, err := NewDecoder(bytes.NewReader(bad), Options{})
		if err != nil {
			t.Fatal(err)
		}
		var ferr error
		rows := 0
		for {
			_, err := dec.Next()
			if err != nil {
				ferr = err
				break
			}
			rows++
		}
		dec.Close()
		var ce *CorruptError
		if !errors.As(ferr, &ce) {
			t.Errorf("frame %d: error %v (%T), want *CorruptError", frame, ferr, ferr)
			continue
		}
		if ce.Line < 1 || ce.Unwrap() == nil || dec.Tail() != nil {
			t.Errorf("frame %d: CorruptError line %d err %v tail %v", frame, ce.Line, ce.Err, dec.Tail())
		}
		if _, err := dec.Next(); !errors.Is(err, io.EOF) {
			t.Errorf("frame %d: Next after the error = %v, want io.EOF", frame, err)
		}
		t.Logf("frame %d corrupt: %d rows before %v", frame, rows, ferr)
		if _, err := Check(bytes.NewReader(bad), Options{}); !errors.As(err, &ce) {
			t.Errorf("frame %d: Check error %v, want *CorruptError", frame, err)
		}
	}
}

// TestUnterminatedFinalLine: a plain file whose last record has no newline
// ends in a torn tail that is reported, not decoded — unless the caller
// asks for it (an HTTP body, a hand-made file).
func TestUnterminatedFinalLine(t *testing.T) {
	plain := readTestdata(t, "dialects/v3-system.jsonl")
	cut := bytes.TrimSuffix(plain, []byte("\n"))
	lastLine := bytes.Count(plain, []byte("\n"))
	lastLen := len(cut) - bytes.LastIndexByte(cut, '\n') - 1

	rows, dec := decodeAll(t, cut, Options{})
	if len(rows) != lastLine-1 {
		t.Errorf("%d rows, want %d (the torn record is not decoded)", len(rows), lastLine-1)
	}
	if tail := dec.Tail(); tail == nil || tail.Frame || tail.Line != lastLine || tail.Bytes != lastLen {
		t.Errorf("tail = %+v, want line %d, %d bytes, not a frame", tail, lastLine, lastLen)
	}
	rep := checkBytes(t, cut, Options{})
	if rep.Tail == nil || len(rep.Violations) != 0 || !slices.Equal(rep.DanglingTurns, []int64{1}) {
		t.Errorf("Check: tail %v violations %v open %v", rep.Tail, rep.Violations, rep.DanglingTurns)
	}

	// A torn record longer than MaxRowBytes is reported with its full size.
	long := append(bytes.Clone(plain), bytes.Repeat([]byte("x"), 5000)...)
	if _, dec := decodeAll(t, long, Options{MaxRowBytes: 1000}); dec.Tail() == nil || dec.Tail().Bytes != 5000 || dec.Tail().Line != lastLine+1 {
		t.Errorf("long torn tail = %+v, want line %d, 5000 bytes", dec.Tail(), lastLine+1)
	}

	rows, dec = decodeAll(t, cut, Options{DecodeUnterminated: true})
	if len(rows) != lastLine || dec.Tail() != nil {
		t.Errorf("DecodeUnterminated: %d rows tail %v, want %d rows and no tail", len(rows), dec.Tail(), lastLine)
	}
	want, _ := decodeAll(t, plain, Options{})
	assertSameRows(t, rows, want)
}

// TestRowTooLong: a row over MaxRowBytes is one ROW_TOO_LONG problem at its
// line, the next row decodes normally, and the validator does not count
// the dropped row's seq as a gap.
func TestRowTooLong(t *testing.T) {
	const limit = 256
	// rowOf is a seq-2 todo/write row of exactly n bytes.
	rowOf := func(n int) string {
		const head, tail = `{"type":"todo/write","seq":2,"time":3,"data":{"todos":[],"pad":"`, `"}}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	header := `{"type":"session","version":4,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}`
	pre := `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}` + "\n" +
		`{"type":"step/start","seq":1,"time":2,"data":{"turn":1,"step":1}}`
	post := `{"type":"step/end","seq":3,"time":4,"data":{"turn":1,"step":1}}` + "\n" +
		`{"type":"turn/end","seq":4,"time":5,"data":{"turn":1,"reason":{"kind":"completed"}}}` + "\n"

	for _, tc := range []struct {
		name    string
		size    int
		tooLong bool
	}{
		{"well under", 100, false},
		{"exactly the limit", limit, false},
		{"one byte over", limit + 1, true},
		{"ten times over", 10 * limit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := rowOf(tc.size)
			input := []byte(header + "\n" + pre + "\n" + row + "\n" + post)
			rows, _ := decodeAll(t, input, Options{MaxRowBytes: limit})
			if len(rows) != 6 {
				t.Fatalf("%d rows, want 6", len(rows))
			}
			r := rows[3]
			if tc.tooLong {
				if r.Kind != RowInvalid || len(r.Problems) != 1 || r.Problems[0].Code != CodeRowTooLong ||
					r.Problems[0].Line != 4 || r.Line != 4 || r.Bytes != nil || r.Events != nil {
					t.Errorf("row 4: kind %v problems %v bytes %d", r.Kind, r.Problems, len(r.Bytes))
				}
			} else if r.Kind != RowEvent || len(r.Problems) != 0 || string(r.Bytes) != row {
				t.Errorf("row 4: kind %v problems %v", r.Kind, r.Problems)
			}
			wantOffset := int64(len(header) + len(pre) + len(row) + 3)
			if n := rows[4]; n.Line != 5 || n.Kind != RowEvent || n.Events[0].Seq != 3 || n.Offset != wantOffset {
				t.Errorf("row after: line %d kind %v offset %d (want %d)", n.Line, n.Kind, n.Offset, wantOffset)
			}
			rep := checkBytes(t, input, Options{MaxRowBytes: limit})
			var got []string
			for _, v := range rep.Violations {
				got = append(got, fmt.Sprintf("%d:%s", v.Line, v.Code))
			}
			want := ""
			if tc.tooLong {
				want = "4:" + CodeRowTooLong
			}
			if strings.Join(got, " ") != want {
				t.Errorf("violations %v, want %q", got, want)
			}
		})
	}
}

// repeatReader yields n copies of c without holding them.
type repeatReader struct {
	n int
	c byte
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = r.c
	}
	r.n -= k
	return k, nil
}

// TestRowTooLongNotAccumulated: skipping a 64 MiB row costs memory in
// proportion to the limit, not to the row.
func TestRowTooLongNotAccumulated(t *testing.T) {
	const rowSize = 64 << 20
	const limit = 64 << 10
	src := io.MultiReader(
		strings.NewReader(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`+"\n"+`{"type":"todo/write","seq":1,"time":2,"data":{"pad":"`),
		&repeatReader{n: rowSize, c: 'a'},
		strings.NewReader(`"}}`+"\n"+`{"type":"turn/end","seq":2,"time":3,"data":{"turn":1,"reason":{"kind":"completed"}}}`+"\n"),
	)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	dec, err := NewDecoder(src, Options{MaxRowBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var kinds []RowKind
	for {
		r, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, r.Kind)
	}
	runtime.ReadMemStats(&after)
	if fmt.Sprint(kinds) != fmt.Sprint([]RowKind{RowEvent, RowInvalid, RowEvent}) {
		t.Errorf("row kinds %v", kinds)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("skipping a %d-byte row allocated %d bytes", rowSize, alloc)
	if alloc > 4<<20 {
		t.Errorf("reading past a %d-byte row allocated %d bytes; the row must not be accumulated", rowSize, alloc)
	}
}

// TestCRLFAndBlankLines: CRLF line ends decode as LF ones do (the CR stays
// in Row.Bytes, so the input round-trips), and blank or whitespace-only
// lines are skipped while line numbers stay physical.
func TestCRLFAndBlankLines(t *testing.T) {
	plain := readTestdata(t, "dialects/v4-tools.jsonl")
	want, _ := decodeAll(t, plain, Options{})

	crlf := bytes.ReplaceAll(plain, []byte("\n"), []byte("\r\n"))
	got, dec := decodeAll(t, crlf, Options{})
	if len(got) != len(want) || dec.Format() != headerFormat(4) {
		t.Fatalf("CRLF: %d rows format %+v", len(got), dec.Format())
	}
	assertRowsMatchInput(t, crlf, got)
	for i := range got {
		if !bytes.Equal(got[i].Bytes, append(bytes.Clone(want[i].Bytes), '\r')) {
			t.Errorf("line %d: CRLF row bytes %q", got[i].Line, got[i].Bytes)
		}
		if shapes(got[i : i+1])[0].Seqs != shapes(want[i : i+1])[0].Seqs || got[i].Kind != want[i].Kind {
			t.Errorf("line %d: CRLF row decodes differently", got[i].Line)
		}
	}
	if rep := checkBytes(t, crlf, Options{}); len(rep.Violations) != 0 || rep.Events != 25 {
		t.Errorf("CRLF Check: %d events, violations %v", rep.Events, rep.Violations)
	}

	// Blank lines: empty, spaces, a lone CR, a tab; between rows and at the end.
	lines := bytes.SplitAfter(plain, []byte("\n"))
	var spaced []byte
	blanks := []string{"\n", "   \n", "\r\n", "\t\n"}
	for i, l := range lines {
		spaced = append(spaced, l...)
		if i%3 == 1 {
			spaced = append(spaced, blanks[i%len(blanks)]...)
		}
	}
	spaced = append(spaced, "\n\n"...)
	got, dec = decodeAll(t, spaced, Options{})
	if len(got) != len(want) || dec.Tail() != nil {
		t.Fatalf("blank lines: %d rows (want %d), tail %v", len(got), len(want), dec.Tail())
	}
	assertRowsMatchInput(t, spaced, got)
	for i := range got {
		if !bytes.Equal(got[i].Bytes, want[i].Bytes) {
			t.Errorf("row %d (line %d): bytes %q, want %q", i, got[i].Line, got[i].Bytes, want[i].Bytes)
		}
	}
	if rep := checkBytes(t, spaced, Options{}); len(rep.Violations) != 0 || rep.Rows != len(want) {
		t.Errorf("blank lines Check: %d rows, violations %v", rep.Rows, rep.Violations)
	}
}
