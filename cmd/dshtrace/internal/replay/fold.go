package replay

import (
	"bytes"
	"encoding/base64"
	"net/url"

	"github.com/klauspost/compress/flate"
)

// A folded block keeps its body as raw deflate, base64url-encoded (nothing
// HTML must escape), as the text of a hidden element; the page's script
// inflates it (DecompressionStream) when the block is opened or a link
// points into it. Its data-seq, data-m, data-line and data-ids say what it
// holds (holds).

// folder compresses block bodies, reusing its compressor.
type folder struct {
	buf bytes.Buffer
	w   *flate.Writer
}

func newFolder() *folder {
	f := &folder{}
	f.w, _ = flate.NewWriter(&f.buf, flate.BestSpeed) // a valid level: no error
	return f
}

// fold compresses a body; the result is the folder's, until its next fold.
func (f *folder) fold(body []byte) ([]byte, error) {
	f.buf.Reset()
	f.w.Reset(&f.buf)
	if _, err := f.w.Write(body); err != nil {
		return nil, err
	}
	if err := f.w.Close(); err != nil {
		return nil, err
	}
	return f.buf.Bytes(), nil
}

// base64 writes a folded body as the page holds it: base64url, whose
// alphabet holds nothing HTML must escape.
func (h *hbuf) base64(z []byte) {
	n := base64.RawURLEncoding.EncodedLen(len(z))
	h.Grow(n)
	b := h.AvailableBuffer()[:n]
	base64.RawURLEncoding.Encode(b, z)
	h.Write(b)
}

// holds writes a folded block's attributes: the seqs of its rows, the
// messages it shows (a turn's homes), the lines of its rows without a seq,
// and its steps' and calls' element ids (t nil: a gap, no turn).
func (r *renderer) holds(h *hbuf, rows []*Row, t *Turn) {
	seqs := r.seqs[:0]
	for _, row := range rows {
		for k := row.Seq; k < row.Seq+int64(row.Count); k++ {
			if r.s.rowOf.get(k) == row {
				seqs = append(seqs, k)
			}
		}
	}
	h.raw(` data-folded data-seq="`)
	writeRanges(h, seqs)
	h.raw(`" data-m="`)
	if t != nil {
		writeRanges(h, t.Homes)
	}
	lines := seqs[:0]
	for _, row := range rows {
		if row.Count == 0 {
			lines = append(lines, int64(row.Line))
		}
	}
	h.raw(`" data-line="`)
	writeRanges(h, lines)
	r.seqs = lines
	h.raw(`" data-ids="`)
	if t != nil {
		sep := false
		for _, st := range t.Steps {
			sep = writeID(h, st.Anchor, sep)
			sep = writeCallIDs(h, st.Calls, sep)
		}
	}
	h.raw(`"`)
}

// writeID writes an element id into the list of data-ids, after a space
// when sep.
func writeID(h *hbuf, id string, sep bool) bool {
	if sep {
		h.WriteByte(' ')
	}
	h.text(url.PathEscape(id))
	return true
}

func writeCallIDs(h *hbuf, calls []*Call, sep bool) bool {
	for _, c := range calls {
		sep = writeID(h, c.Anchor, sep)
		sep = writeCallIDs(h, c.Subs, sep)
	}
	return sep
}

// writeRanges writes numbers as runs: "3-9 12-12".
func writeRanges(h *hbuf, ns []int64) {
	for i, r := range ranges(ns) {
		if i > 0 {
			h.WriteByte(' ')
		}
		h.int(r.Lo)
		h.WriteByte('-')
		h.int(r.Hi)
	}
}
