package replay

import (
	"strconv"
	"time"
)

// rows writes a list of log rows. A session has a row for every event (a
// long one, hundreds of thousands), so the rows are written here rather
// than by a template action per field; every value goes through
// html/template's own escaper, and the markup is the page's own.
func (r *renderer) rows(b *hbuf, rows []*Row) {
	s := r.s
	for _, row := range rows {
		b.WriteString(`<div class="row" id="`)
		b.rowID(s, row)
		b.WriteString(`">`)
		for k := row.Seq + 1; k < row.Seq+int64(row.Count); k++ {
			if s.rowOf.get(k) == row {
				b.WriteString(`<span class="member" id="`)
				b.text(s.Prefix)
				b.WriteString("seq-")
				b.int(k)
				b.WriteString(`"></span>`)
			}
		}
		b.WriteString(`<a class="sq" href="#`)
		b.rowID(s, row)
		b.WriteString(`">`)
		b.rowSeq(row)
		b.WriteString(`</a><span class="faint">`)
		if row.Time != 0 {
			b.Write(time.UnixMilli(row.Time).UTC().AppendFormat(b.AvailableBuffer(), clockLayout))
		}
		b.WriteString(`</span><span class="ty">`)
		b.text(row.Type)
		b.WriteString(`</span><span class="faint">`)
		b.rowPlace(row)
		b.WriteString(`</span><span>`)
		if m := s.message(row.Message); row.Message >= 0 && m != nil && m.home {
			b.WriteString(`<a href="#`)
			b.home(s, row.Message)
			b.WriteString(`">message</a> `)
		}
		if row.Call != nil {
			b.WriteString(`<a href="#`)
			b.text(row.Call.Anchor)
			b.WriteString(`">call</a> `)
		}
		for _, p := range r.problems(row) {
			b.WriteString(`<span class="problem">`)
			b.text(p)
			b.WriteString(`</span> `)
		}
		if raw := r.raw.bytes(row.raw); raw != nil {
			b.WriteString(`<details class="raw"><summary>JSON · `)
			b.WriteString(kb(len(raw)))
			b.WriteString(`</summary><pre>`)
			b.bytes(raw)
			b.WriteString(`</pre></details>`)
		}
		b.WriteString("</span></div>\n")
	}
}

// rowID writes a row's element id (Session.rowID).
func (h *hbuf) rowID(s *Session, r *Row) {
	h.text(s.Prefix)
	if r.Count == 0 {
		h.WriteString("line-")
		h.int(int64(r.Line))
		return
	}
	h.WriteString("seq-")
	h.int(r.Seq)
	if r.again > 0 {
		h.WriteByte('~')
		h.int(int64(r.again))
	}
}

// int writes a number.
func (h *hbuf) int(n int64) { h.Write(strconv.AppendInt(h.AvailableBuffer(), n, 10)) }

// rowSeq labels a row by its seqs, or its line when it has none.
func (h *hbuf) rowSeq(r *Row) {
	if r.Count == 0 {
		h.WriteString("line ")
		h.int(int64(r.Line))
		return
	}
	h.int(r.Seq)
	if r.Count > 1 {
		h.WriteString("–")
		h.int(r.Seq + int64(r.Count) - 1)
	}
}

// rowPlace writes where a row belongs: turn.step, or the turn.
func (h *hbuf) rowPlace(r *Row) {
	if r.Turn == 0 {
		return
	}
	h.int(r.Turn)
	if r.Step != 0 {
		h.WriteByte('.')
		h.int(r.Step)
	}
}

// problems are the decoder's findings on a row.
func (r *renderer) problems(row *Row) []string {
	if row.problems == 0 {
		return nil
	}
	return r.p.problems[row.problems-1]
}
