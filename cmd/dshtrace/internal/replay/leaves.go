package replay

import (
	"bytes"
	"strconv"
)

// The templates write the page; the pieces a session repeats by the
// thousand — message parts, references to messages, notes, source ranges
// (and log rows, rows.go) — are written here, where a template would spend
// a reflective call per value. Every value is escaped as html/template's
// escaper escapes text (hbuf.text; FuzzEscape holds the two equal);
// attributes are always quoted; links only point into the page ("#" and
// an element id).

// hbuf builds a piece of the page.
type hbuf struct{ bytes.Buffer }

// raw writes markup of the page's own.
func (h *hbuf) raw(s string) { h.WriteString(s) }

// escapes are the bytes html/template's text escaper replaces, and what
// with (NUL, which it must not pass, by U+FFFD).
var escapes = [256]string{'<': "&lt;", '>': "&gt;", '&': "&amp;", '"': "&#34;", '\'': "&#39;", 0: "\uFFFD"}

// text writes a value, escaped (in text and in quoted attributes alike).
// A log row is mostly quotes and short runs between them, so the value is
// escaped a byte at a time into the buffer's free space rather than
// written a run at a time.
func (h *hbuf) text(s string) {
	i := 0
	for i < len(s) && escapes[s[i]] == "" {
		i++
	}
	if i == len(s) {
		h.WriteString(s)
		return
	}
	out := append(h.AvailableBuffer(), s[:i]...)
	for ; i < len(s); i++ {
		if e := escapes[s[i]]; e != "" {
			out = append(out, e...)
		} else {
			out = append(out, s[i])
		}
	}
	h.Write(out)
}

// bytes writes a value given as bytes, escaped.
func (h *hbuf) bytes(b []byte) {
	out := h.AvailableBuffer()
	for _, c := range b {
		if e := escapes[c]; e != "" {
			out = append(out, e...)
		} else {
			out = append(out, c)
		}
	}
	h.Write(out)
}

// link writes a link to element id with an escaped label.
func (h *hbuf) link(id, label string) {
	h.raw(`<a href="#`)
	h.text(id)
	h.raw(`">`)
	h.text(label)
	h.raw(`</a>`)
}

func (r *renderer) parts(h *hbuf, parts []Part) {
	for _, p := range parts {
		switch p.Type {
		case "text":
			clipped(h, "div", "text", p.Text)
		case "reasoning":
			h.raw(`<details class="reasoning"><summary>reasoning · `)
			h.text(plural(len([]rune(p.Text)), "char"))
			h.raw(`</summary>`)
			clipped(h, "div", "text", p.Text)
			h.raw(`</details>`)
		case "tool-call":
			h.raw(`<div class="tc">→ `)
			h.link(r.callID(p.ID), p.Name)
			h.raw(` <span class="faint">`)
			h.text(p.ID)
			h.raw(`</span> <span class="args">`)
			h.text(cutLine(p.Args, 200))
			h.raw(`</span></div>`)
		case "tool-result":
			h.raw(`<div class="tc">← result of `)
			h.link(r.callID(p.ID), p.ID)
			if p.IsError {
				h.raw(` <span class="badge o-error">error</span>`)
			}
			h.raw(`</div>`)
			r.parts(h, p.Inner)
		case "tool-addition", "tool-removal":
			h.raw(`<p class="note-line">`)
			h.text(p.Type)
			h.raw(`: <code>`)
			h.text(p.Name)
			h.raw(`</code></p>`)
		default:
			h.raw(`<p class="note-line">`)
			h.text(p.Type)
			h.raw(` block`)
			if p.Name != "" {
				h.raw(` (`)
				h.text(p.Name)
				h.raw(`)`)
			}
			h.raw(`</p>`)
			clipped(h, "pre", "json", p.Text)
		}
	}
}

// clipped writes text in an element of class; long text is clipped, with
// a button that shows all of it.
func clipped(h *hbuf, tag, class, text string) {
	long := IsLong(text)
	h.raw(`<` + tag + ` class="` + class)
	if long {
		h.raw(` clip`)
	}
	h.raw(`">`)
	h.text(text)
	h.raw(`</` + tag + `>`)
	if long {
		h.raw(`<button type="button" class="more" data-act="more">show all</button>`)
	}
}

// ref writes a one-line reference to a message shown in full elsewhere.
func (r *renderer) ref(h *hbuf, m Msg) {
	h.raw(`<div class="ref"><span class="role">`)
	h.text(roleName(m.Role))
	h.raw(`</span>`)
	h.raw(`<a class="sq" href="#`)
	h.home(r.s, m.Seq)
	h.raw(`">seq `)
	h.raw(strconv.FormatInt(m.Seq, 10))
	h.raw(`</a><span class="x">`)
	if !r.p.NoContent {
		h.text(Excerpt(m.Content, 160))
	}
	h.raw(`</span></div>`)
}

// roleName is how a message's role reads on the page.
func roleName(role string) string {
	if role == "tool" {
		return "tool result"
	}
	return role
}

// notes writes notes, one line each.
func (r *renderer) notes(h *hbuf, notes []*Note) {
	if len(notes) == 0 {
		return
	}
	h.raw(`<div class="notes">`)
	for _, n := range notes {
		seq := strconv.FormatInt(n.Seq, 10)
		h.raw(`<div class="note"><a class="sq" href="#`)
		h.text(r.s.Prefix + "seq-" + seq)
		h.raw(`">` + seq + `</a><span class="ty">`)
		h.text(n.Type)
		h.raw(`</span><span>`)
		h.text(n.Text)
		h.raw(`</span>`)
		if n.Detail != "" {
			h.raw(`<span class="d">`)
			h.text(n.Detail)
			h.raw(`</span>`)
		}
		if home := r.s.homeID(n.Message); n.Message >= 0 && home != "" {
			h.link(home, "message")
		}
		h.raw(`</div>`)
	}
	h.raw(`</div>`)
}

// sources writes what a message cites: its sourceEventSeqs and,
// transitively, theirs — each run of rows a link that highlights them all.
func (r *renderer) sources(h *hbuf, seq int64) {
	direct, all := r.s.Sources(seq)
	if len(direct) == 0 {
		return
	}
	var n int64
	for _, x := range all {
		n += x.Len()
	}
	h.raw(`<details class="src"><summary>sources: `)
	for i, x := range direct {
		if i > 0 {
			h.raw(", ")
		}
		h.seqRange(x)
	}
	if n > int64(len(direct)) {
		h.raw(" · " + strconv.FormatInt(n, 10) + " seqs transitively")
	}
	h.raw(`</summary><div class="note-line">cited: `)
	r.ranges(h, direct)
	h.raw(`</div><div class="note-line">all, transitively: `)
	r.ranges(h, all)
	h.raw(`</div></details>`)
}

func (r *renderer) ranges(h *hbuf, rs []Range) {
	for i, x := range rs {
		if i > 0 {
			h.raw(", ")
		}
		h.raw(`<a href="#`)
		h.text(r.s.Prefix)
		h.raw(`seq-`)
		h.int(x.Lo)
		h.raw(`" data-p="`)
		h.text(r.s.Prefix)
		h.raw(`" data-lo="`)
		h.int(x.Lo)
		h.raw(`" data-hi="`)
		h.int(x.Hi)
		h.raw(`">`)
		h.seqRange(x)
		h.raw(`</a>`)
	}
}

// seqRange writes a range as Range.String does.
func (h *hbuf) seqRange(x Range) {
	h.int(x.Lo)
	if x.Hi != x.Lo {
		h.raw("–")
		h.int(x.Hi)
	}
}
