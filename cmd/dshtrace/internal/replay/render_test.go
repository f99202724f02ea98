package replay

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// update rewrites the golden pages instead of comparing against them.
var update = flag.Bool("update", false, "rewrite the golden pages under testdata/golden")

// jaeger is the Jaeger UI the test pages link to.
const jaeger = "http://127.0.0.1:16686"

// render builds and renders a log file.
func render(t *testing.T, path string, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, buildFile(t, path, opts), RenderOptions{Jaeger: jaeger}); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b.String()
}

// assetsOut replaces the inline style and script, the same on every page,
// and the policy that names their hashes (TestPolicyAllowsOnlyOwnAssets
// checks them), by markers.
func assetsOut(page string) string {
	page = policyAttr.ReplaceAllString(page, `content="(the page's policy)"`)
	page = strings.Replace(page, "<style>"+css+"</style>", "<style>/* assets/replay.css */</style>", 1)
	return strings.Replace(page, "<script>"+js+"</script>", "<script>/* assets/replay.js */</script>", 1)
}

var policyAttr = regexp.MustCompile(`content="default-src [^"]*"`)

// goldenLogs are the logs whose pages are pinned: every dialect of the
// repository and the seed sample.
func goldenLogs(t testing.TB) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "testdata", "dialects", "*.jsonl"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no dialect logs: %v", err)
	}
	return append(logs, filepath.Join("..", "..", "..", "..", "testdata", "seed", "sample.jsonl"))
}

// TestGoldenPages pins the page of each of the repository's dialects
// (go test -update rewrites them; read the diff).
func TestGoldenPages(t *testing.T) {
	for _, path := range goldenLogs(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl") + ".html"
		t.Run(name, func(t *testing.T) {
			got := assetsOut(render(t, path, Options{}))
			golden := filepath.Join("testdata", "golden", name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update creates it)", err)
			}
			if got != string(want) {
				t.Errorf("the page of %s differs from %s (go test -update rewrites it):\n%s", path, golden, firstDiff(got, string(want)))
			}
		})
	}
}

// firstDiff shows the first line where two texts differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + cut(gl, 400) + "\nwant: " + cut(wl, 400)
		}
	}
	return ""
}

// dom is what a page's HTML parses to: its elements by tag and the ids.
type dom struct {
	tags    map[string]int
	ids     map[string]bool
	scripts []string
	styles  []string
	hrefs   []string
	attrs   map[string]bool
	csp     string
}

func parse(t *testing.T, page string) dom {
	t.Helper()
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	d := dom{tags: map[string]int{}, ids: map[string]bool{}, attrs: map[string]bool{}}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			d.tags[n.Data]++
			text := ""
			if n.FirstChild != nil && n.FirstChild.Type == html.TextNode {
				text = n.FirstChild.Data
			}
			switch n.Data {
			case "script":
				d.scripts = append(d.scripts, text)
			case "style":
				d.styles = append(d.styles, text)
			case "meta":
				if attr(n, "http-equiv") == "Content-Security-Policy" {
					d.csp = attr(n, "content")
				}
			}
			for _, a := range n.Attr {
				d.attrs[a.Key] = true
				switch a.Key {
				case "id":
					if d.ids[a.Val] {
						t.Errorf("id %q twice", a.Val)
					}
					d.ids[a.Val] = true
				case "href", "src", "action", "formaction":
					d.hrefs = append(d.hrefs, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return d
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// pageTags are the only elements a page is made of.
var pageTags = []string{"html", "head", "meta", "title", "style", "body", "script", "div", "span", "a", "button",
	"main", "section", "h1", "h3", "dl", "dt", "dd", "code", "details", "summary", "p", "pre", "b", "label",
	"select", "option", "nav"}

// pageAttrs are the only attributes.
var pageAttrs = []string{"lang", "charset", "name", "content", "http-equiv", "class", "id", "href", "type",
	"data-act", "data-reason", "data-p", "data-lo", "data-hi", "data-find", "open", "value",
	"data-seq", "data-m", "data-line", "data-ids", "data-folded", "hidden"}

// checkInert requires a page to be only ours: our elements and attributes,
// our one style and one script, links within the page or to the traces.
func checkInert(t *testing.T, name, page string) dom {
	t.Helper()
	d := parse(t, page)
	for tag := range d.tags {
		if !slices.Contains(pageTags, tag) {
			t.Errorf("%s: element <%s> on the page", name, tag)
		}
	}
	for a := range d.attrs {
		if !slices.Contains(pageAttrs, a) {
			t.Errorf("%s: attribute %q on the page", name, a)
		}
	}
	if len(d.scripts) != 1 || d.scripts[0] != js {
		t.Errorf("%s: %d scripts, want the page's own only", name, len(d.scripts))
	}
	if len(d.styles) != 1 || d.styles[0] != css {
		t.Errorf("%s: %d styles, want the page's own only", name, len(d.styles))
	}
	for _, h := range d.hrefs {
		if !strings.HasPrefix(h, "#") && !strings.HasPrefix(h, jaeger+"/trace/") {
			t.Errorf("%s: a link to %q", name, h)
		}
	}
	if d.csp != csp {
		t.Errorf("%s: Content-Security-Policy %q, want %q", name, d.csp, csp)
	}
	return d
}

// TestHostileLogsAreInert: the page of every hostile log — one of them all
// markup and script, in ids, names, paths, prompts, answers, arguments,
// results, errors and event types — is made of the page's own elements
// and script only, and its text still says what the log says.
func TestHostileLogsAreInert(t *testing.T) {
	for _, path := range repoLogs(t) {
		if filepath.Base(path) == "unsupported-version.jsonl" {
			continue
		}
		for _, noContent := range []bool{false, true} {
			checkInert(t, path, render(t, path, Options{NoContent: noContent}))
		}
	}
	page := render(t, filepath.Join("..", "..", "..", "..", "testdata", "hostile", "tolerated-markup.jsonl"), Options{})
	for _, escaped := range []string{"&lt;script&gt;window.__pwned=1&lt;/script&gt;", "&lt;svg onload=", "{{.}}&lt;!--"} {
		if !strings.Contains(page, escaped) {
			t.Errorf("the markup log's page does not show %q as text", escaped)
		}
	}
}

// TestNoContent: without content the page keeps the structure — turns,
// calls, rows, tokens, ids — and none of the log's text.
func TestNoContent(t *testing.T) {
	tests := []struct {
		log      string
		content  []string
		ids      []string
		presence []string
	}{{
		log:      "dialects/v4-tools.jsonl",
		content:  []string{"Read a.txt", "You are dsh", "/etc/passwd", "hello", "a.txt says", "writing outside", "path outside", "AutoReviewDenied", `"type":"session"`},
		ids:      []string{"turn-1", "step-1.1", "call-call_1", "call-call_2", "seq-13", "seq-17", "line-1"},
		presence: []string{"AUTO_REVIEW_DENIED", "in 1,200", "deepseek-v4-flash", "call_2"},
	}, {
		log: "hostile/tolerated-markup.jsonl",
		content: []string{"user &lt;", "thinking &lt;", "answer &#34;", "result &lt;", "title &lt;", "stderr &lt;", "reason &lt;",
			"failure &lt;", "turn failed", "msg &lt;", "denied &#34;", "system &lt;", "broken", "hook &lt;", "Err&lt;"},
		ids:      []string{"turn-1", "turn-2", "seq-16"},
		presence: []string{"DENIED", "aborted (hook)"},
	}}
	for _, tt := range tests {
		page := render(t, filepath.Join("..", "..", "..", "..", "testdata", tt.log), Options{NoContent: true})
		d := checkInert(t, tt.log, page)
		main := page[strings.Index(page, "<main>"):]
		for _, c := range tt.content {
			if strings.Contains(main, c) {
				t.Errorf("%s without content: %q is on the page", tt.log, c)
			}
		}
		for _, id := range tt.ids {
			if !d.ids[id] {
				t.Errorf("%s without content: no element %q", tt.log, id)
			}
		}
		for _, p := range tt.presence {
			if !strings.Contains(main, p) {
				t.Errorf("%s without content: %q is missing", tt.log, p)
			}
		}
	}
}

// TestPolicyAllowsOnlyOwnAssets: the page's policy allows exactly its own
// style and script (by hash), nothing else from anywhere.
func TestPolicyAllowsOnlyOwnAssets(t *testing.T) {
	for _, want := range []string{"default-src 'none'", "style-src '" + hash(css) + "'", "script-src '" + hash(js) + "'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(csp, "http") {
		t.Errorf("policy %q allows more than the page", csp)
	}
}

// TestEveryRowTurnAndCallReachable: every seq of every event, every row
// without one, every turn and every call of the repository's logs has its
// element on the page, and the page's ids are unique.
func TestEveryRowTurnAndCallReachable(t *testing.T) {
	for _, path := range repoLogs(t) {
		if filepath.Base(path) == "unsupported-version.jsonl" {
			continue
		}
		p := buildFile(t, path, Options{})
		var b bytes.Buffer
		if err := Render(&b, p, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		d := parse(t, b.String())
		for _, s := range p.Sessions {
			for _, r := range s.Rows {
				if !d.ids[s.rowID(r)] {
					t.Errorf("%s: row at line %d (%s) has no element %q", path, r.Line, r.Type, s.rowID(r))
				}
				for k := r.Seq; k < r.Seq+int64(r.Count); k++ {
					if id := s.Prefix + "seq-" + strconv.FormatInt(k, 10); !d.ids[id] && s.rowOf.get(k) == r {
						t.Errorf("%s: seq %d has no element", path, k)
					}
				}
			}
			for _, tn := range s.Turns {
				if !d.ids[tn.Anchor] {
					t.Errorf("%s: turn %d has no element", path, tn.Number)
				}
				for _, st := range tn.Steps {
					for _, c := range st.Calls {
						if !d.ids[c.Anchor] {
							t.Errorf("%s: call %q has no element", path, c.CallID)
						}
					}
				}
			}
		}
	}
}

// TestTraceLinksAreSpans: each turn links to the trace `dshtrace spans`
// gives it (the same engine, the same ids).
func TestTraceLinksAreSpans(t *testing.T) {
	linked := 0
	for _, path := range goldenLogs(t) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		eng := turnengine.New(turnengine.Config{})
		err = turnengine.Replay(eng, f, sessionlog.Options{}, FallbackSession(path), time.Now())
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, turn := range eng.Drain() {
			if turn.Late == nil {
				want[turnrender.TraceID(turn.SessionID, turn.Number).String()] = true
			}
		}
		for _, s := range buildFile(t, path, Options{}).Sessions {
			for _, turn := range s.Turns {
				switch {
				case turn.Inherited:
				case !want[turn.TraceID]:
					t.Errorf("%s: session %s turn %d links trace %q, which `spans` does not give", path, s.ID, turn.Number, turn.TraceID)
				default:
					linked++
					delete(want, turn.TraceID)
				}
			}
		}
		if len(want) > 0 {
			t.Errorf("%s: `spans` gives traces no turn links: %v", path, want)
		}
	}
	if linked < 15 {
		t.Errorf("only %d turns linked", linked)
	}
}

// TestCorpusPages: the page of every corpus log builds and renders, and
// is inert.
func TestCorpusPages(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		checkInert(t, l.Name, render(t, l.Path, Options{}))
	}
}

// TestUnreadable: a log no reader reads is an error, not a page.
func TestUnreadable(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "..", "..", "testdata", "hostile", "unsupported-version.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Build(f, Options{Name: "x"}); err == nil || !strings.Contains(err.Error(), "unsupported") {
		t.Fatalf("got %v, want the unsupported version", err)
	}
	if _, err := Build(errReader{}, Options{}); !errors.Is(err, errBroken) {
		t.Fatalf("a failing reader: got %v", err)
	}
}

var errBroken = errors.New("broken")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

var _ io.Reader = errReader{}

// TestSources: a message's sources are its citations and, transitively,
// theirs — as `dshtrace query --sources SEQ --transitive` finds them, only
// citations of events up to SEQ followed.
func TestSources(t *testing.T) {
	const log = `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}
{"type":"todo/write","seq":1,"time":1,"data":{"todos":[]}}
{"type":"todo/write","seq":2,"time":1,"data":{"todos":[]}}
{"type":"todo/write","seq":3,"time":1,"data":{"todos":[]},"sourceEventSeqs":[1]}
{"type":"todo/write","seq":4,"time":1,"data":{"todos":[]}}
{"type":"todo/write","seq":5,"time":1,"data":{"todos":[]},"sourceEventSeqs":[3,4]}
{"type":"todo/write","seq":6,"time":1,"data":{"todos":[]},"sourceEventSeqs":[5,8]}
{"type":"todo/write","seq":7,"time":1,"data":{"todos":[]}}
{"type":"todo/write","seq":8,"time":1,"data":{"todos":[]},"sourceEventSeqs":[7]}
{"type":"todo/write","seq":9,"time":1,"data":{"todos":[]},"sourceEventSeqs":[9,3,3]}
{"type":"todo/write","seq":10,"time":1,"data":{"todos":[]},"sourceEventSeqs":[9]}
`
	p, err := Build(strings.NewReader(log), Options{Name: "sources"})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sessions[0]
	for _, tt := range []struct {
		seq         int64
		direct, all string
	}{{6, "5, 8", "1, 3–5, 8"}, {5, "3–4", "1, 3–4"}, {8, "7", "7"}, {2, "", ""}, {9, "3, 9", "1, 3, 9"}, {10, "9", "1, 3, 9"}} {
		d, a := s.Sources(tt.seq)
		if rangesText(d) != tt.direct || rangesText(a) != tt.all {
			t.Errorf("seq %d: sources %q, transitively %q; want %q, %q", tt.seq, rangesText(d), rangesText(a), tt.direct, tt.all)
		}
	}
}

func rangesText(rs []Range) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}

// TestFoldedTurns: a folded page holds each block's body compressed, and
// it inflates to the very body the unfolded page shows; the block says
// which rows, messages and calls it holds.
func TestFoldedTurns(t *testing.T) {
	for _, name := range []string{"v4-tools", "wrap-jsonrpc", "v0-packed"} {
		path := filepath.Join("..", "..", "..", "..", "testdata", "dialects", name+".jsonl")
		p := buildFile(t, path, Options{})
		var plain, folded bytes.Buffer
		if err := Render(&plain, p, RenderOptions{Fold: FoldNever}); err != nil {
			t.Fatal(err)
		}
		if err := Render(&folded, p, RenderOptions{Fold: FoldAlways}); err != nil {
			t.Fatal(err)
		}
		checkInert(t, name, folded.String())
		want, got := bodies(t, plain.String()), bodies(t, folded.String())
		if len(want) == 0 || len(got) != len(want) {
			t.Fatalf("%s: %d folded blocks, %d unfolded", name, len(got), len(want))
		}
		for i, b := range got {
			z := b.FirstChild
			if z == nil || attr(z, "class") != "z" || z.FirstChild == nil {
				t.Fatalf("%s block %d is not folded", name, i)
			}
			raw, err := base64.RawURLEncoding.DecodeString(z.FirstChild.Data)
			if err != nil {
				t.Fatal(err)
			}
			inflated, err := io.ReadAll(flate.NewReader(bytes.NewReader(raw)))
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := html.ParseFragment(bytes.NewReader(inflated), want[i])
			if err != nil {
				t.Fatal(err)
			}
			var g, w bytes.Buffer
			for _, n := range nodes {
				html.Render(&g, n)
			}
			for c := want[i].FirstChild; c != nil; c = c.NextSibling {
				html.Render(&w, c)
			}
			if g.String() != w.String() {
				t.Errorf("%s block %d inflates to another body:\n%s", name, i, firstDiff(g.String(), w.String()))
			}
		}
		s := p.Sessions[0]
		page := folded.String()
		for _, turn := range s.Turns {
			var seqs []int64
			for _, r := range turn.Rows {
				for k := r.Seq; k < r.Seq+int64(r.Count); k++ {
					seqs = append(seqs, k)
				}
			}
			for _, attr := range []string{`data-seq="` + rangeList(seqs) + `"`, `data-m="` + rangeList(turn.Homes) + `"`} {
				if !strings.Contains(page, `id="`+turn.Anchor+`"`) || !strings.Contains(page, attr) {
					t.Errorf("%s turn %d: no %s", name, turn.Number, attr)
				}
			}
		}
	}
}

// bodies are the turn-body elements of a page, in order.
func bodies(t *testing.T, page string) []*html.Node {
	t.Helper()
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var out []*html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "div" && attr(n, "class") == "turn-body" {
			out = append(out, n)
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

// longLog is a v4 session of n turns, each a prompt and an answer of some
// length: long enough to fold, and to outgrow any writer's buffer.
func longLog(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":4,"id":"long","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n")
	seq := 0
	ev := func(typ, data, extra string) {
		fmt.Fprintf(&b, `{"type":%q,"seq":%d,"time":%d,"data":%s%s}`+"\n", typ, seq, 1000+seq, data, extra)
		seq++
	}
	pad := strings.Repeat("text & <markup> ", 40)
	for t := 1; t <= n; t++ {
		ev("turn/start", fmt.Sprintf(`{"turn":%d}`, t), "")
		ev("step/start", fmt.Sprintf(`{"turn":%d,"step":1}`, t), "")
		ev("user/message", fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"prompt %d %s"}]}`, t, pad), `,"surfaceOp":"append"`)
		ev("assistant/message", fmt.Sprintf(`{"turn":%d,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"answer %d %s"}]}}`, t, t, pad), `,"surfaceOp":"append"`)
		ev("step/end", fmt.Sprintf(`{"turn":%d,"step":1}`, t), "")
		ev("turn/end", fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, t), "")
	}
	return b.String()
}

// failingWriter fails once it has taken n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errBroken
	}
	w.n -= len(p)
	return len(p), nil
}

// TestRenderStreams: a page is written as its blocks are rendered; a
// writer that fails midway stops the rendering, its error returned and no
// worker left behind (TestMain's leak check).
func TestRenderStreams(t *testing.T) {
	p, err := Build(strings.NewReader(longLog(500)), Options{Name: "long"})
	if err != nil {
		t.Fatal(err)
	}
	var whole bytes.Buffer
	if err := Render(&whole, p, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	d := checkInert(t, "long", whole.String())
	if !d.ids["turn-500"] || !strings.Contains(whole.String(), "data-folded") {
		t.Fatalf("the page of 500 turns lacks its last turn, or is not folded")
	}
	for _, at := range []int{0, 1 << 10, whole.Len() / 2, whole.Len() - 1} {
		if err := Render(&failingWriter{n: at}, p, RenderOptions{}); !errors.Is(err, errBroken) {
			t.Errorf("a writer failing at byte %d of %d: got %v", at, whole.Len(), err)
		}
	}
}

// TestFindPage: for every turn, step, call and row element of the
// repository's logs, the page FindPage names, rendered as a window,
// holds that element.
func TestFindPage(t *testing.T) {
	found := 0
	for _, path := range repoLogs(t) {
		if filepath.Base(path) == "unsupported-version.jsonl" {
			continue
		}
		p := buildFile(t, path, Options{})
		var whole bytes.Buffer
		if err := Render(&whole, p, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		s := p.Sessions[0]
		for _, n := range []int{1, 2} {
			pages := s.Pages(n)
			windows := make([]dom, len(pages))
			for i, pg := range pages {
				var b bytes.Buffer
				if err := Render(&b, p, RenderOptions{Window: &Window{From: pg[0], To: pg[1]}}); err != nil {
					t.Fatal(err)
				}
				windows[i] = parse(t, b.String())
			}
			for id := range parse(t, whole.String()).ids {
				rest, ok := cutPrefix(id, s.Prefix)
				if !ok || !slices.ContainsFunc([]string{"turn-", "step-", "call-", "seq-", "line-"}, func(k string) bool { return strings.HasPrefix(rest, k) }) {
					continue
				}
				i, ok := s.FindPage(n, id)
				switch {
				case !ok:
					t.Errorf("%s, %d turns a page: no page holds %q", path, n, id)
				case !windows[i].ids[id]:
					t.Errorf("%s, %d turns a page: page %d, said to hold %q, does not", path, n, i+1, id)
				default:
					found++
				}
			}
		}
	}
	if found < 1000 {
		t.Errorf("only %d elements found", found)
	}
}

// rangeList writes numbers as the page's data attributes do.
func rangeList(ns []int64) string {
	var h hbuf
	writeRanges(&h, ns)
	return h.String()
}

// TestRenderConcurrently: a server renders one built page for several
// requests at once; each gets the same page (run with -race, nothing of
// the page is written while rendering).
func TestRenderConcurrently(t *testing.T) {
	p, err := Build(strings.NewReader(longLog(400)), Options{Name: "long"})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := Render(&want, p, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	got := make([]bytes.Buffer, 4)
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { errs[i] = Render(&got[i], p, RenderOptions{}) })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || !bytes.Equal(got[i].Bytes(), want.Bytes()) {
			t.Errorf("rendering %d: %v, %d bytes, want %d", i, errs[i], got[i].Len(), want.Len())
		}
	}
}
