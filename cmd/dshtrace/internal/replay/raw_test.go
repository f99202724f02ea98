package replay

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestRawRows: every row kept reads back byte for byte, whatever frame it
// went to — rows that fill frames, a row longer than a frame, empty rows,
// the last frame sealed at the end — and a row not kept reads as none.
func TestRawRows(t *testing.T) {
	var rows rawRows
	var want [][]byte
	var refs []rawRef
	add := func(b []byte) {
		want = append(want, b)
		refs = append(refs, rows.add(b))
	}
	add([]byte{})
	for i := range 3000 {
		add([]byte(`{"seq":` + strconv.Itoa(i) + `,"pad":"` + strings.Repeat("x", i%500) + `"}`))
		if i == 1500 {
			add(bytes.Repeat([]byte("long "), rawFrame))
			add([]byte{})
		}
	}
	add([]byte{})
	rows.done()
	if len(rows.frames) < 4 {
		t.Fatalf("%d frames: the rows did not fill several", len(rows.frames))
	}
	r := rawReader{rows: &rows}
	check := func(i int) {
		if got := r.bytes(refs[i]); got == nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("row %d: %d bytes read back, want %d", i, len(got), len(want[i]))
		}
	}
	for i := range want {
		check(i)
	}
	for i := len(want) - 1; i >= 0; i-- {
		check(i)
	}
	if r.bytes(rawRef{}) != nil || r.err != nil {
		t.Errorf("a row not kept: %v", r.err)
	}
	if r.bytes(rawRef{frame: int32(len(rows.frames) + 1), n: 1}) != nil || r.err == nil {
		t.Error("a frame that is not there reads without an error")
	}
}
