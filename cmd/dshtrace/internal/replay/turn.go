package replay

import (
	"strconv"
	"strings"
)

// A session's blocks — its turns, and the rows between them — are written
// here rather than by templates: a session of ten thousand turns has
// millions of values to write, and a template action costs a reflective
// call each. Every value goes through html/template's escaper (hbuf.text).

// turn writes a turn: its summary line and its body — or, folded, the
// body compressed (nil: not folded).
func (r *renderer) turn(h *hbuf, t *Turn, open bool, folded []byte) {
	h.raw(`<details class="turn" id="`)
	h.text(t.Anchor)
	h.raw(`" data-reason="`)
	h.text(t.Reason.Kind)
	h.raw(`"`)
	if folded != nil {
		r.holds(h, t.Rows, t)
	} else if open {
		h.raw(` open`)
	}
	h.raw(">\n")
	r.turnSummary(h, t)
	h.raw("\n<div class=\"turn-body\">")
	if folded != nil {
		r.foldedBody(h, folded)
	} else {
		r.turnBody(h, t)
	}
	h.raw("</div>\n</details>")
}

// foldedBody writes a folded block's body: compressed, in a hidden
// element's text (a browser reads text far faster than a long attribute).
func (r *renderer) foldedBody(h *hbuf, z []byte) {
	h.raw(`<div hidden class="z">`)
	h.base64(z)
	h.raw(`</div><p class="note-line">Unfolding…</p>`)
}

func (r *renderer) turnSummary(h *hbuf, t *Turn) {
	h.raw(`<summary><span class="tn">Turn `)
	h.raw(strconv.FormatInt(t.Number, 10))
	h.raw(`</span><span class="badge r-`)
	if t.Late != nil {
		h.raw("late")
	} else {
		h.text(t.Reason.Kind)
	}
	h.raw(`">`)
	h.text(reasonLabel(t))
	h.raw(`</span>`)
	for _, f := range t.Findings {
		findingBadge(h, f.Name)
	}
	h.raw(`<span class="prompt">`)
	if m := r.msg(t.Prompt); m != nil && t.Prompt >= 0 {
		h.text(Excerpt(m.Content, 140))
	}
	h.raw(`</span><span class="meta">`)
	h.text(turnMeta(t))
	h.raw(`</span></summary>`)
}

// turnBody writes what a turn holds: when and where it is, how it ended
// when that is not plain, the prompt, its notes, its steps, its rows.
func (r *renderer) turnBody(h *hbuf, t *Turn) {
	r.turnFacts(h, t)
	r.turnEnding(h, t)
	r.turnFindings(h, t)
	if m := r.msg(t.Prompt); m != nil && t.Prompt >= 0 {
		h.raw("\n")
		r.message(h, m)
	}
	if len(t.Notes) > 0 {
		h.raw("\n")
		r.notes(h, t.Notes)
	}
	h.raw("\n")
	for _, st := range t.Steps {
		r.step(h, st)
	}
	h.raw("<details class=\"rows\"><summary>Log rows of the turn (")
	h.raw(strconv.Itoa(len(t.Rows)))
	h.raw(")</summary>\n")
	r.rows(h, t.Rows)
	h.raw("</details>\n")
}

// turnFacts writes a turn's line of facts: when it started, its seqs, its
// trace, and whether it is a fork's copy.
func (r *renderer) turnFacts(h *hbuf, t *Turn) {
	h.raw("\n<p class=\"note-line\">")
	h.text(when(t.StartTime))
	switch {
	case t.EndSeq == t.StartSeq:
		h.raw(" · seq " + strconv.FormatInt(t.StartSeq, 10))
	case t.EndSeq >= 0:
		h.raw(" · seqs " + strconv.FormatInt(t.StartSeq, 10) + "–" + strconv.FormatInt(t.EndSeq, 10))
	default:
		h.raw(" · seqs " + strconv.FormatInt(t.StartSeq, 10) + "–…")
	}
	if t.TraceID != "" {
		h.raw(" · ")
		if u := r.traceURL(t.TraceID); u != "" {
			h.raw(`<a href="`)
			h.text(u)
			h.raw(`">trace in Jaeger</a> <code class="faint">`)
		} else {
			h.raw(`trace <code>`)
		}
		h.text(t.TraceID)
		h.raw(`</code>`)
	}
	if t.Inherited {
		h.raw(" · inherited from the parent session (its trace is the parent's)")
	}
	h.raw("</p>")
}

// turnEnding says how a turn ended when its reason does not say it all:
// dangling (and why), failed (with what message), or closed late.
func (r *renderer) turnEnding(h *hbuf, t *Turn) {
	if t.Dangling() {
		h.raw("\n<p class=\"note-line r-dangling\">dsh never closed this turn: it is closed as dangling (")
		h.text(t.DanglingCause)
		h.raw(") at its last event, ")
		h.text(when(t.End))
		h.raw(".</p>")
	}
	if f := t.Reason.Failure; f != nil && f.Message != "" {
		h.raw("\n<p class=\"note-line r-error\">")
		h.text(f.Message)
		h.raw("</p>")
	}
	if l := t.Late; l != nil {
		h.raw("\n<div class=\"late\"><b>Closed late.</b> dsh wrote this turn's ")
		h.link(r.seqID(t.LateSeq), "turn/end")
		h.raw(" after the turn had been closed as dangling (")
		h.text(l.DanglingCause)
		h.raw("): it ended <b>")
		h.text(kindLabel(t.LateReason))
		h.raw("</b>")
		for i, c := range l.Closers {
			if i == 0 {
				h.raw(", closing")
			}
			h.raw(" ")
			h.link(r.seqID(c.Seq), c.Name)
		}
		h.raw(".</div>")
	}
}

// findingBadge writes a finding's badge: its rule's name.
func findingBadge(h *hbuf, name string) {
	h.raw(`<span class="badge finding">`)
	h.text(name)
	h.raw(`</span>`)
}

// turnFindings writes what went wrong in a turn: each finding's
// explanation and links to its evidence, the rows of its events and its
// tool calls.
func (r *renderer) turnFindings(h *hbuf, t *Turn) {
	if len(t.Findings) == 0 {
		return
	}
	h.raw("\n<div class=\"findings\">")
	for _, f := range t.Findings {
		h.raw("\n<p>")
		findingBadge(h, f.Name)
		h.raw(" ")
		h.text(f.Explanation)
		h.raw(` <span class="evidence">`)
		if len(f.Seqs) == 1 {
			h.raw("seq")
		} else {
			h.raw("seqs")
		}
		for i, seq := range f.Seqs {
			if i > 0 {
				h.raw(",")
			}
			h.raw(" ")
			h.link(r.seqID(seq), strconv.FormatInt(seq, 10))
		}
		if len(f.CallIDs) > 0 {
			h.raw(" · ")
			if len(f.CallIDs) == 1 {
				h.raw("call")
			} else {
				h.raw("calls")
			}
			for i, id := range f.CallIDs {
				if i > 0 {
					h.raw(",")
				}
				h.raw(" ")
				h.link(r.callID(id), id)
			}
		}
		h.raw("</span></p>")
	}
	h.raw("</div>")
}

// gap writes the rows between turns.
func (r *renderer) gap(h *hbuf, b *Block, folded []byte) {
	h.raw(`<div class="gap"><details class="rows"`)
	if folded != nil {
		r.holds(h, b.Rows, nil)
	}
	h.raw(`><summary>`)
	h.text(plural(len(b.Rows), "row"))
	h.raw(" outside any turn")
	if len(b.Rows) > 0 {
		h.raw(", from ")
		h.rowSeq(b.Rows[0])
	}
	h.raw("</summary>\n<div class=\"turn-body\">")
	if folded == nil {
		r.rows(h, b.Rows)
	} else {
		r.foldedBody(h, folded)
	}
	h.raw("</div></details></div>")
}

func (r *renderer) seqID(seq int64) string { return r.s.Prefix + "seq-" + strconv.FormatInt(seq, 10) }

// step writes a step: what the model saw, what it answered, the calls it
// made, and the step's other events.
func (r *renderer) step(h *hbuf, st *Step) {
	h.raw(`<section class="step" id="`)
	h.text(st.Anchor)
	h.raw(`">` + "\n<h3>Step " + strconv.FormatInt(st.Turn, 10) + "." + strconv.FormatInt(st.Number, 10))
	if st.Open {
		h.raw(` <span class="badge r-dangling">never ended</span>`)
	}
	h.raw(`<span class="meta">`)
	h.text(stepMeta(st))
	h.raw("</span></h3>")
	if ns := notesSplit(st, true); len(ns) > 0 {
		h.raw("\n")
		r.notes(h, ns)
	}
	if st.Context != nil {
		h.raw("\n")
		r.context(h, st)
	} else {
		h.raw("\n<p class=\"note-line\">No model call began in this step.</p>")
	}
	for _, a := range st.Attempts {
		h.raw("\n")
		r.attempt(h, a)
	}
	for _, c := range st.Calls {
		h.raw("\n")
		r.call(h, c)
	}
	if ns := notesSplit(st, false); len(ns) > 0 {
		h.raw("\n")
		r.notes(h, ns)
	}
	h.raw("\n</section>\n")
}

// context writes what the model saw for a step's request: the messages
// carried from the request before (a link), the request header's system
// prompt and tools, then each message new since — in full where it first
// appears, else as a reference.
func (r *renderer) context(h *hbuf, st *Step) {
	c := st.Context
	h.raw(`<details class="context"`)
	if ctxOpen(c) {
		h.raw(" open")
	}
	h.raw(">\n")
	r.contextSummary(h, st)
	if c.Carried > 0 {
		h.raw("\n<div class=\"carried\">↳ first, the " + plural(c.Carried, "message") + " the model saw in ")
		h.link(c.Base.Anchor, "step "+stepLabel(c.Base))
		h.raw("</div>")
	}
	if hd := st.Header; hd != nil {
		r.requestHeader(h, hd)
	}
	for i, m := range c.Messages {
		h.raw("\n")
		if c.Home[i] {
			r.message(h, &m)
		} else {
			r.ref(h, m)
		}
	}
	h.raw("\n</details>")
}

// contextSummary writes a context's line: how many messages, how many
// new since the step it continues, and the request header in effect.
func (r *renderer) contextSummary(h *hbuf, st *Step) {
	c := st.Context
	h.raw("<summary>What the model saw: ")
	h.raw(plural(c.Len, "message"))
	if c.Base != nil {
		h.raw(", " + strconv.Itoa(len(c.Messages)) + " new since step " + stepLabel(c.Base))
	}
	if hd := st.Header; hd != nil {
		h.raw(" · ")
		h.link(r.seqID(hd.Seq), "request/header")
		if len(hd.Tools) > 0 {
			h.raw(" with " + plural(len(hd.Tools), "tool"))
		}
	}
	h.raw("</summary>")
}

// requestHeader writes what a request header gives the model besides the
// messages: its system prompt (dsh v0–v2) and the tools offered.
func (r *renderer) requestHeader(h *hbuf, hd *RequestHeader) {
	if hd.System != "" {
		h.raw("\n<div class=\"msg system\"><div class=\"who\">System prompt of the ")
		h.link(r.seqID(hd.Seq), "request/header")
		h.raw("</div>")
		clipped(h, "div", "text", hd.System)
		h.raw("</div>")
	}
	if len(hd.Tools) > 0 {
		h.raw("\n<p class=\"note-line\">Tools offered: ")
		for i, t := range hd.Tools {
			if i > 0 {
				h.raw(", ")
			}
			h.raw("<code>")
			h.text(t)
			h.raw("</code>")
		}
		h.raw("</p>")
	}
}

func stepLabel(st *Step) string {
	return strconv.FormatInt(st.Turn, 10) + "." + strconv.FormatInt(st.Number, 10)
}

// message writes a message in full, at its home.
func (r *renderer) message(h *hbuf, m *Msg) {
	h.raw(`<div class="msg `)
	h.text(m.Role)
	h.raw(`" id="`)
	h.home(r.s, m.Seq)
	h.raw(`"><div class="who">`)
	h.text(roleName(m.Role))
	r.seqLink(h, m.Seq)
	if m.Role == "tool" {
		h.raw(`<span class="faint">call `)
		h.text(m.ToolCallID)
		if m.IsError {
			h.raw(" · error")
		}
		h.raw("</span>")
	}
	h.raw("</div>")
	r.content(h, r.parseParts(m))
	r.sources(h, m.Seq)
	h.raw("</div>")
}

// seqLink writes the "seq N" link to a row.
func (r *renderer) seqLink(h *hbuf, seq int64) {
	h.raw(`<a class="sq" href="#`)
	h.text(r.seqID(seq))
	h.raw(`">seq ` + strconv.FormatInt(seq, 10) + `</a>`)
}

// content writes message parts, or says that the page has no content.
func (r *renderer) content(h *hbuf, parts []Part) {
	if r.p.NoContent {
		h.raw(`<span class="muted">content not shown</span>`)
		return
	}
	r.parts(h, parts)
}

func (r *renderer) parseParts(m *Msg) []Part {
	if r.p.NoContent {
		return nil
	}
	return Parts(m.Content)
}

// attempt writes a model call: the answer its message committed, else what
// became of it.
func (r *renderer) attempt(h *hbuf, a *Attempt) {
	if !a.Committed {
		h.raw(`<p class="note-line"><span class="badge o-error">attempt ` + strconv.Itoa(a.Index))
		if a.Failed() {
			h.raw(" failed")
		} else {
			h.raw(" not committed")
		}
		h.raw("</span> ")
		h.text(attemptMeta(a))
		if f := a.Failure; f != nil {
			h.raw(" · <b>")
			h.text(f.Code)
			h.raw("</b>")
			if f.Message != "" {
				h.raw(" ")
				h.text(f.Message)
			}
		}
		h.raw("</p>")
		return
	}
	m := r.msg(a.MessageSeq)
	if m == nil {
		h.raw(`<p class="note-line">The model's message (`)
		h.link(r.seqID(a.MessageSeq), "seq "+strconv.FormatInt(a.MessageSeq, 10))
		h.raw(") shows it nothing: ")
		h.text(attemptMeta(a))
		h.raw("</p>")
		return
	}
	h.raw(`<div class="msg answer" id="`)
	h.home(r.s, m.Seq)
	h.raw(`"><div class="who">answer`)
	r.seqLink(h, m.Seq)
	h.raw(`<span class="faint">`)
	h.text(attemptMeta(a))
	h.raw("</span></div>")
	r.content(h, r.parseParts(m))
	r.sources(h, m.Seq)
	h.raw("</div>")
}

// call writes a tool call: its head line, its arguments and result, its
// error and approvals, and its nested dispatches.
func (r *renderer) call(h *hbuf, c *Call) {
	h.raw(`<div class="call" id="`)
	h.text(c.Anchor)
	h.raw(`">`)
	r.callHead(h, c)
	h.raw("\n<div class=\"body\">")
	r.callArguments(h, c)
	r.callResult(h, c)
	if c.Error != "" {
		h.raw("\n<div class=\"kv\"><span class=\"k\">error</span><div><pre>")
		h.text(c.Error)
		h.raw("</pre></div></div>")
	}
	if len(c.Notes) > 0 {
		h.raw("\n")
		r.notes(h, c.Notes)
	}
	for _, sub := range c.Subs {
		h.raw("\n")
		r.call(h, sub)
	}
	h.raw("\n</div></div>")
}

// callHead writes a call's line: tool, call id, outcome, latency, its
// rows, and the subagent it started.
func (r *renderer) callHead(h *hbuf, c *Call) {
	id := c.CallID
	if c.SubCallID != "" {
		id = c.SubCallID
	}
	name := c.Name
	if name == "" {
		name = "(unnamed tool)"
	}
	h.raw(`<div class="head"><span class="tool">`)
	h.text(name)
	h.raw(`</span><code class="faint">`)
	h.text(id)
	h.raw(`</code><span class="badge o-`)
	h.text(c.Outcome)
	h.raw(`">`)
	h.text(c.Outcome)
	if c.ErrorCode != "" {
		h.raw(" · ")
		h.text(c.ErrorCode)
	}
	h.raw(`</span><span class="meta">`)
	h.text(callMeta(c))
	if c.CallSeq >= 0 {
		h.raw(" · ")
		r.seqLink(h, c.CallSeq)
	}
	if c.ResultSeq >= 0 {
		h.raw(" → ")
		r.seqLink(h, c.ResultSeq)
	}
	h.raw("</span>")
	child, ok := r.childAt[c.Anchor]
	if c.Child != nil {
		child, ok = *c.Child, true
	}
	if ok {
		child.Call = "" // this is the call
		h.raw("<span>subagent ")
		r.sessionLink(h, child)
		h.raw("</span>")
	}
	h.raw("</div>")
}

// callArguments writes what a call was given (with content): a tool
// call's arguments as logged, a dispatch's from its row.
func (r *renderer) callArguments(h *hbuf, c *Call) {
	if r.p.NoContent {
		return
	}
	var args string
	if c.SubCallID != "" {
		args = r.subArgs(c)
	} else {
		args = Indent(c.Arguments)
	}
	if args != "" {
		h.raw("\n<div class=\"kv\"><span class=\"k\">arguments</span><div>")
		clipped(h, "pre", "json", args)
		h.raw("</div></div>")
	}
}

// callResult writes what a call returned: a dispatch's content from its
// row, a tool result's message — shown here, its home — or that the log
// has none.
func (r *renderer) callResult(h *hbuf, c *Call) {
	switch m := r.msg(c.ResultSeq); {
	case c.SubCallID != "":
		if ps := r.subResult(c); len(ps) > 0 && !r.p.NoContent {
			h.raw("\n<div class=\"kv\"><span class=\"k\">result</span><div>")
			r.parts(h, ps)
			h.raw("</div></div>")
		}
	case m != nil && c.ResultSeq >= 0:
		h.raw("\n<div class=\"kv\"><span class=\"k\">result</span><div id=\"")
		h.home(r.s, m.Seq)
		h.raw("\">")
		if r.p.NoContent {
			r.content(h, nil)
		} else {
			r.parts(h, resultParts(m))
		}
		r.sources(h, m.Seq)
		h.raw("</div></div>")
	case c.ResultSeq < 0:
		h.raw("\n<p class=\"note-line\">No result in the log.</p>")
	}
}

// sessionLink writes a link to another session (and to the call that
// started it, on this page), or its id when it has no page.
func (r *renderer) sessionLink(h *hbuf, l Link) {
	u := r.sessionURL(l.Session)
	if u != "" {
		h.raw(`<a href="`)
		h.text(u)
		h.raw(`">`)
	}
	h.raw("<code>")
	h.text(l.Session)
	h.raw("</code>")
	if u != "" {
		h.raw("</a>")
	}
	if l.Call != "" {
		h.raw(" (")
		h.link(l.Call, "the call")
		h.raw(")")
	}
}

// isWebURL reports whether u is an absolute http(s) URL: the only kind a
// page links to outside itself.
func isWebURL(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}
