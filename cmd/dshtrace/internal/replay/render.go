package replay

import (
	"bufio"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"io"
	"slices"
	"strings"
)

//go:embed assets
var assets embed.FS

// The page's own style and script, and the policy that allows them and
// nothing else: no request leaves the page, and no script the log might
// smuggle in would run.
var (
	css = mustRead("assets/replay.css")
	js  = mustRead("assets/replay.js")
	csp = "default-src 'none'; style-src '" + hash(css) + "'; script-src '" + hash(js) +
		"'; img-src data:; base-uri 'none'; form-action 'self'"
)

func mustRead(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(h[:])
}

// base holds the parsed templates. It is never executed itself: each
// rendering executes a clone with its own functions (html/template clones
// only a template not yet executed).
var base = template.Must(template.New("").Funcs(funcs(nil)).ParseFS(assets, "assets/*.html"))

// RenderOptions shape the HTML of a page.
type RenderOptions struct {
	// Jaeger is the Jaeger UI's base URL: each turn links to
	// Jaeger/trace/<trace id>. Empty: the trace id is shown, not linked.
	Jaeger string
	// SessionURL is the URL of another session's page, "" when there is
	// none (a parent or subagent session not served). Nil: a session is
	// linked only when it is on this page.
	SessionURL func(id string) string
	// Home links back to the list of sessions; "" for none.
	Home string
	// Client is the client that wrote the session (an archive's @clients
	// root): the page says whose it is. "" for none.
	Client string
	// Window shows part of the first session's turns (a server's page of
	// a long session); nil: all of them.
	Window *Window
	// OpenTurns: turns start unfolded when the session has at most this
	// many (default 40).
	OpenTurns int
	// Children are the subagent sessions a session started that the page
	// cannot know from the log itself (a server's root knows them by their
	// headers' parentSession); nil: none.
	Children func(session string) []Child
	// Fold says whether each turn's body is kept folded away in the page,
	// compressed, and unfolded by the page's script when opened: what keeps
	// a session of thousands of turns quick to open. FoldAuto folds a
	// session of more than FoldTurns turns or FoldBytes bytes of rows.
	Fold Fold
}

// Fold is how a page keeps its turns' bodies.
type Fold int

// Folding.
const (
	FoldAuto Fold = iota
	FoldNever
	FoldAlways
)

// Beyond these a session's turns are folded (FoldAuto).
const (
	FoldTurns = 300
	FoldBytes = 8 << 20
)

// Window is the stretch of a session's blocks one page shows, with the
// links to the others.
type Window struct {
	From, To int // block indexes, To exclusive
	// Pages link to every page (the current one with an empty URL);
	// Find is the URL that, followed by an element id, finds the page
	// holding it.
	Pages []PageLink
	Find  string
}

// PageLink is one page of a windowed session.
type PageLink struct {
	Label, URL string
}

// Render writes the page as one self-contained HTML document, streamed to
// w: the skeleton's templates around each session's blocks (its turns and
// the rows between them), which are rendered in parallel and written in
// order as they are done. The page is never held whole.
func Render(w io.Writer, p *Page, o RenderOptions) error {
	if o.OpenTurns <= 0 {
		o.OpenTurns = 40
	}
	r := &renderer{p: p, o: o}
	v := r.view()
	t, err := r.templates(nil)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := t.ExecuteTemplate(bw, "page-head", v); err != nil {
		return err
	}
	for i := range v.Sessions {
		sv := &v.Sessions[i]
		if err := t.ExecuteTemplate(bw, "session-head", sv); err != nil {
			return err
		}
		if err := r.blocks(bw, sv); err != nil {
			return err
		}
		if err := t.ExecuteTemplate(bw, "session-tail", sv); err != nil {
			return err
		}
	}
	if err := t.ExecuteTemplate(bw, "page-tail", v); err != nil {
		return err
	}
	return bw.Flush()
}

// renderer is one rendering: the page and its options; a clone of it
// renders one session's blocks (s).
type renderer struct {
	p *Page
	o RenderOptions
	s *Session
	// childAt are the subagent sessions of RenderOptions.Children placed at
	// the calls that started them.
	childAt map[string]Link
	// raw reads the rows' bytes back (a worker's own); seqs is its
	// scratch list (fold.go).
	raw  rawReader
	seqs []int64
}

// templates is a clone of the templates whose functions answer for
// session s.
func (r *renderer) templates(s *Session) (*template.Template, error) {
	t, err := base.Clone()
	if err != nil {
		return nil, err
	}
	return t.Funcs(funcs(&renderer{p: r.p, o: r.o, s: s, childAt: r.childAt})), nil
}

// pageView is what the page template reads.
type pageView struct {
	Title    string
	CSS      template.CSS
	JS       template.JS
	CSP      string
	Find     string
	Home     string
	Tail     string
	Sessions []sessionView
}

// sessionView is one session's section: its blocks (all, or a window's)
// and how they are written.
type sessionView struct {
	S      *Session
	Blocks []*Block
	// childAt places the subagents the options know of at their calls.
	childAt map[string]Link
	// Children are the subagent sessions the session started.
	Children []Link
	Pages    []PageLink
	Open     bool
	Fold     bool
	// Client is the client that wrote the session (RenderOptions.Client).
	Client string
}

func (r *renderer) view() pageView {
	v := pageView{CSS: template.CSS(css), JS: template.JS(js), CSP: csp, Home: r.o.Home, Tail: r.p.Tail}
	for i, s := range r.p.Sessions {
		sv := sessionView{S: s, Blocks: s.Blocks, Children: s.Children}
		if i == 0 {
			sv.Client = r.o.Client
		}
		if w := r.o.Window; w != nil && i == 0 {
			sv.Blocks = s.Blocks[max(0, w.From):min(len(s.Blocks), w.To)]
			sv.Pages = w.Pages
			v.Find = w.Find
		}
		turns, bytes := 0, 0
		for _, b := range sv.Blocks {
			rows := b.Rows
			if b.Turn != nil {
				turns++
				rows = b.Turn.Rows
			}
			for _, row := range rows {
				bytes += int(row.raw.n)
			}
		}
		sv.Fold = r.o.Fold == FoldAlways || r.o.Fold == FoldAuto && (turns > FoldTurns || bytes > FoldBytes)
		sv.Open = !sv.Fold && turns <= r.o.OpenTurns
		if r.o.Children != nil {
			var more []Link
			sv.childAt, more = children(s, r.o.Children(s.ID))
			sv.Children = append(slices.Clip(sv.Children), more...)
		}
		v.Sessions = append(v.Sessions, sv)
	}
	v.Title = "dsh replay"
	if len(r.p.Sessions) > 0 {
		v.Title = "dsh session " + r.p.Sessions[0].ID
	}
	return v
}

// funcs are the template functions of the page's skeleton and of the
// session list (r nil: for parsing).
func funcs(r *renderer) template.FuncMap {
	return template.FuncMap{
		"sessionURL": func(id string) string { return r.sessionURL(id) },
		"when":       when,
		"dur":        dur,
		"num":        num,
		"usd":        usd,
		"kb":         kb,
		"plural":     plural,
		"sub":        func(a, b int64) int64 { return a - b },
		"tokens":     tokens,
		"reasons":    reasons,
		"findings":   findingCounts,
		"format":     formatName,
		"add": func(v ...int64) int64 {
			var n int64
			for _, x := range v {
				n += x
			}
			return n
		},
		"int": func(v int64) int { return int(v) },
	}
}

// msg is the message a seq projects, nil when none.
func (r *renderer) msg(seq int64) *Msg {
	if m := r.s.message(seq); m != nil {
		return &m.Msg
	}
	return nil
}

// callID is the element id of the (first) call of id.
func (r *renderer) callID(id string) string {
	if a, ok := r.s.callAt[id]; ok {
		return a
	}
	return r.s.Prefix + "call-" + id
}

func (r *renderer) traceURL(id string) string {
	if id == "" || !isWebURL(r.o.Jaeger) {
		return ""
	}
	return strings.TrimRight(r.o.Jaeger, "/") + "/trace/" + id
}

// sessionURL links another session: its section on this page, else the
// page the options give.
func (r *renderer) sessionURL(id string) string {
	for _, s := range r.p.Sessions {
		if s.ID == id {
			return "#" + s.Prefix + "session"
		}
	}
	if r.o.SessionURL != nil {
		return r.o.SessionURL(id)
	}
	return ""
}

// resultParts is what a tool result shows: the content of its message, a
// v0–v3 user-role result unwrapped from its one tool-result block.
func resultParts(m *Msg) []Part {
	ps := Parts(m.Content)
	if len(ps) == 1 && ps[0].Type == "tool-result" {
		return ps[0].Inner
	}
	return ps
}

// subArgs and subResult read a dispatch sub-call's arguments and content
// from its rows.
func (r *renderer) subArgs(c *Call) string {
	d := r.rowData(r.s.rowOf.get(c.CallSeq))
	if d == nil || d.get("arguments") == nil {
		return ""
	}
	return Indent(jsonText(d.get("arguments")))
}

func (r *renderer) subResult(c *Call) []Part {
	d := r.rowData(r.s.rowOf.get(c.ResultSeq))
	if d == nil || d.get("content") == nil {
		return nil
	}
	return Parts(jsonText(d.get("content")))
}

// rowData is the data object of a row's event, its wrapper removed (nil
// without content).
func (r *renderer) rowData(row *Row) data {
	if row == nil || row.Count != 1 {
		return nil
	}
	raw := r.raw.bytes(row.raw)
	var v data
	if raw == nil || !decodeJSON(raw, &v) {
		return nil
	}
	if p, ok := v.get("params", "event").(map[string]any); ok {
		v = p
	} else if e, ok := v.get("event").(map[string]any); ok {
		v = e
	}
	d, _ := v.get("data").(map[string]any)
	return d
}

// turnView is a turn and whether it starts unfolded.
type turnView struct {
	T    *Turn
	Open bool
}

// rangesView is a list of seq ranges of a session (its element id prefix).
type rangesView struct {
	Ranges []Range
	Prefix string
}

// ctxOpen: a context starts unfolded when it shows a message in full for
// the first time.
func ctxOpen(c *Context) bool {
	return slices.Contains(c.Home, true)
}

// notesSplit are a step's notes written before its request (the request
// header and context, a user message queued) or after it began.
func notesSplit(st *Step, before bool) []*Note {
	var out []*Note
	for _, n := range st.Notes {
		if (st.Context != nil && n.Seq < st.RequestSeq) == before {
			out = append(out, n)
		}
	}
	return out
}
