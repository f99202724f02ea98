package replay

import "strconv"

// rowsHTML writes a list of log rows. A session has a row for every event
// (a long one, hundreds of thousands), so the rows are written here rather
// than by a template action per field; every value goes through
// html/template's own escaper, and the markup is the page's own.
func rowsHTML(b *hbuf, s *Session, rows []*Row) {
	for _, r := range rows {
		b.WriteString(`<div class="row" id="`)
		b.text((r.Anchor))
		b.WriteString(`">`)
		for k := r.Seq + 1; k < r.Seq+int64(r.Count); k++ {
			if s.rowOf.get(k) == r {
				b.WriteString(`<span class="member" id="`)
				b.text((s.Prefix + "seq-" + strconv.FormatInt(k, 10)))
				b.WriteString(`"></span>`)
			}
		}
		b.WriteString(`<a class="sq" href="#`)
		b.text((r.Anchor))
		b.WriteString(`">`)
		b.text((rowSeq(r)))
		b.WriteString(`</a><span class="faint">`)
		if r.Time != 0 {
			b.WriteString(clock(r.Time))
		}
		b.WriteString(`</span><span class="ty">`)
		b.text((r.Type))
		b.WriteString(`</span><span class="faint">`)
		b.WriteString(rowPlace(r))
		b.WriteString(`</span><span>`)
		if home := s.homes[r.Message]; r.Message >= 0 && home != "" {
			b.WriteString(`<a href="#`)
			b.text((home))
			b.WriteString(`">message</a> `)
		}
		if r.Call != "" {
			b.WriteString(`<a href="#`)
			b.text((r.Call))
			b.WriteString(`">call</a> `)
		}
		for _, p := range r.Problems {
			b.WriteString(`<span class="problem">`)
			b.text((p))
			b.WriteString(`</span> `)
		}
		if r.Bytes != nil {
			b.WriteString(`<details class="raw"><summary>JSON · `)
			b.WriteString(kb(len(r.Bytes)))
			b.WriteString(`</summary><pre>`)
			b.bytes(r.Bytes)
			b.WriteString(`</pre></details>`)
		}
		b.WriteString("</span></div>\n")
	}
}
