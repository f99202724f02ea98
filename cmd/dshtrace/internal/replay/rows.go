package replay

import (
	"strconv"
	"time"
)

// rows writes a list of log rows. A session has a row for every event (a
// long one, hundreds of thousands), so the rows are written here rather
// than by a template action per field; every value is escaped (hbuf.text),
// and the markup is the page's own.
func (r *renderer) rows(h *hbuf, rows []*Row) {
	for _, row := range rows {
		r.row(h, row)
	}
}

// row writes one row's line: its element ids, what it is, what it links
// to, and its bytes one click away.
func (r *renderer) row(h *hbuf, row *Row) {
	s := r.s
	h.WriteString(`<div class="row" id="`)
	h.rowID(s, row)
	h.WriteString(`">`)
	r.members(h, row)
	h.WriteString(`<a class="sq" href="#`)
	h.rowID(s, row)
	h.WriteString(`">`)
	h.rowSeq(row)
	h.WriteString(`</a><span class="faint">`)
	if row.Time != 0 {
		h.Write(time.UnixMilli(row.Time).UTC().AppendFormat(h.AvailableBuffer(), clockLayout))
	}
	h.WriteString(`</span><span class="ty">`)
	h.text(row.Type)
	h.WriteString(`</span><span class="faint">`)
	h.rowPlace(row)
	h.WriteString(`</span><span>`)
	r.rowLinks(h, row)
	if raw := r.raw.bytes(row.raw); raw != nil {
		h.WriteString(`<details class="raw"><summary>JSON · `)
		h.WriteString(kb(len(raw)))
		h.WriteString(`</summary><pre>`)
		h.bytes(raw)
		h.WriteString(`</pre></details>`)
	}
	h.WriteString("</span></div>\n")
}

// members writes the element ids of a packed row's other events.
func (r *renderer) members(h *hbuf, row *Row) {
	for k := row.Seq + 1; k < row.Seq+int64(row.Count); k++ {
		if r.s.rowOf.get(k) == row {
			h.WriteString(`<span class="member" id="`)
			h.text(r.s.Prefix)
			h.WriteString("seq-")
			h.int(k)
			h.WriteString(`"></span>`)
		}
	}
}

// rowLinks writes what a row links to — the message it projects, the call
// it belongs to — and the decoder's problems with it.
func (r *renderer) rowLinks(h *hbuf, row *Row) {
	if m := r.s.message(row.Message); row.Message >= 0 && m != nil && m.home {
		h.WriteString(`<a href="#`)
		h.home(r.s, row.Message)
		h.WriteString(`">message</a> `)
	}
	if row.Call != nil {
		h.WriteString(`<a href="#`)
		h.text(row.Call.Anchor)
		h.WriteString(`">call</a> `)
	}
	for _, p := range r.problems(row) {
		h.WriteString(`<span class="problem">`)
		h.text(p)
		h.WriteString(`</span> `)
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
