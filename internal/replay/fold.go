package replay

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"

	"github.com/klauspost/compress/flate"
)

// A folded block keeps its body as raw deflate, base64url-encoded (nothing
// HTML must escape), as the text of a hidden element; the page's script
// inflates it (DecompressionStream) when the block is opened or a link
// points into it. Its data-seq, data-m, data-line and data-ids say what it
// holds: the seqs of its rows, the messages it shows, the lines of its
// rows without a seq, and its steps' and calls' element ids.

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

// holds says what a block holds, for the script that finds a link's target.
func holds(s *Session, b *Block) (seqs, messages, lines, ids string) {
	rows := b.Rows
	var homes []int64
	var words []string
	if t := b.Turn; t != nil {
		rows, homes = t.Rows, t.Homes
		for _, st := range t.Steps {
			words = append(words, url.PathEscape(st.Anchor))
			words = callIDs(words, st.Calls)
		}
	}
	var ss, ls []int64
	for _, r := range rows {
		if r.Count == 0 {
			ls = append(ls, int64(r.Line))
		}
		for k := r.Seq; k < r.Seq+int64(r.Count); k++ {
			if s.rowOf.get(k) == r {
				ss = append(ss, k)
			}
		}
	}
	return rangeList(ss), rangeList(homes), rangeList(ls), strings.Join(words, " ")
}

func callIDs(words []string, calls []*Call) []string {
	for _, c := range calls {
		words = callIDs(append(words, url.PathEscape(c.Anchor)), c.Subs)
	}
	return words
}

// rangeList writes numbers as runs: "3-9 12-12".
func rangeList(ns []int64) string {
	var b strings.Builder
	for i, r := range ranges(ns) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(r.Lo, 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatInt(r.Hi, 10))
	}
	return b.String()
}
