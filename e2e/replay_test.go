//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// The replay pages in a real browser: from file:// and from `dshtrace
// serve`, clicked through — turns, calls, sources, deep links into folded
// turns and into other pages of a served session — with every turn, call
// and row present, nothing requested from outside the page, and the markup
// log inert. Needs only the dshtrace binary and Chromium (no Jaeger):
//
//	cd e2e && go test -tags e2e -count=1 -run TestReplay -v .
//
// Screenshots are kept as artifacts (replay-*.png).

// dshtraceBin finds the dshtrace binary: $DSHTRACE, else ../bin/dshtrace
// (make build), else one built for the test.
func dshtraceBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DSHTRACE"); p != "" {
		return p
	}
	if p, err := filepath.Abs(filepath.Join("..", "bin", "dshtrace")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	bin := filepath.Join(t.TempDir(), "dshtrace")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/dshtrace")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building dshtrace: %v\n%s", err, out)
	}
	return bin
}

// browser starts headless Chromium with a fresh profile, loopback only.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium")), chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting %s: %v", bin, err)
	}
	return ctx
}

// requests records every URL the page asks for.
type requests struct {
	mu   sync.Mutex
	urls []string
}

func (r *requests) listen(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			r.mu.Lock()
			r.urls = append(r.urls, e.Request.URL)
			r.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// outside are the recorded requests that left the page's own origin
// (file:// or the server).
func (r *requests) outside(own string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.urls {
		if !strings.HasPrefix(u, own) && !strings.HasPrefix(u, "data:") {
			out = append(out, u)
		}
	}
	return out
}

// eval runs a script in the page, with a deadline.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// do runs browser actions with a deadline.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// highlighted waits until element id is on the page, shown (its sections
// unfolded) and highlighted.
func highlighted(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.getElementById(%q); return !!e && e.classList.contains('hl') && e.getClientRects().length > 0; })()`, id)
	deadline := time.Now().Add(20 * time.Second)
	for !eval[bool](t, ctx, js) {
		if time.Now().After(deadline) {
			t.Fatalf("#%s is not shown highlighted", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenshot keeps a screenshot of the page as an artifact.
func screenshot(t *testing.T, ctx context.Context, name string, full bool) string {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var png []byte
	var err error
	if full {
		eval[bool](t, ctx, `(window.scrollTo(0, 0), true)`)
		png, err = chromedp.Run(c, chromedp.FullScreenshot(100))
	} else {
		png, err = chromedp.Run(c, chromedp.CaptureScreenshot())
	}
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifactDir(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// want is what a log says the page must hold: the element id of every
// turn, every call and every row.
func want(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(row.Events) == 0 {
			add(fmt.Sprintf("line-%d", row.Line))
		}
		for _, e := range row.Events {
			add(fmt.Sprintf("seq-%d", e.Seq))
			switch e.Type {
			case "turn/start":
				add(fmt.Sprintf("turn-%d", e.Turn))
			case "tool/call":
				add("call-" + e.CallID)
			}
		}
	}
	return ids
}

// missing are the ids the page lacks.
func missing(t *testing.T, ctx context.Context, ids []string) []string {
	t.Helper()
	have := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('[id]'), e => e.id)`)
	var out []string
	for _, id := range ids {
		if !slices.Contains(have, id) {
			out = append(out, id)
		}
	}
	return out
}

// longSession writes a v4 session of n turns, each a prompt, a tool call
// and an answer: enough turns that its page folds them.
func longSession(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, `{"type":"session","version":4,"id":"long-session","createdAt":1790000000000,"cwd":"/w","isSeeded":false,"delegationDepth":0}`)
	seq, tm := 0, int64(1790000000000)
	ev := func(format string, args ...any) {
		tm += 10
		fmt.Fprintf(w, `{"seq":%d,"time":%d,`, seq, tm)
		fmt.Fprintf(w, format+"\n", args...)
		seq++
	}
	for turn := 1; turn <= n; turn++ {
		ev(`"type":"turn/start","data":{"turn":%d}}`, turn)
		ev(`"type":"step/start","data":{"turn":%d,"step":1}}`, turn)
		ev(`"type":"user/message","data":{"id":"u%d","role":"user","content":[{"type":"text","text":"Question %d"}],"source":{"kind":"user"}},"surfaceOp":"append"}`, turn, turn)
		ev(`"type":"assistant/message","data":{"turn":%d,"step":1,"message":{"id":"a%d","role":"assistant","content":[{"type":"tool-call","id":"c%d","name":"read","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":10,"outputTokens":2}},"surfaceOp":"append"}`, turn, turn, turn)
		ev(`"type":"tool/call","data":{"turn":%d,"step":1,"callId":"c%d","name":"read","arguments":"{}"}}`, turn, turn)
		ev(`"type":"tool/result","data":{"turn":%d,"step":1,"message":{"id":"r%d","role":"tool","toolCallId":"c%d","source":{"kind":"tool","callId":"c%d"},"content":[{"type":"text","text":"Answer %d"}]}},"surfaceOp":"append","sourceEventSeqs":[%d]}`, turn, turn, turn, turn, turn, seq-1)
		ev(`"type":"step/end","data":{"turn":%d,"step":1}}`, turn)
		ev(`"type":"step/start","data":{"turn":%d,"step":2}}`, turn)
		ev(`"type":"assistant/message","data":{"turn":%d,"step":2,"message":{"id":"b%d","role":"assistant","content":[{"type":"text","text":"Done %d"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":12,"outputTokens":3}},"surfaceOp":"append"}`, turn, turn, turn)
		ev(`"type":"step/end","data":{"turn":%d,"step":2}}`, turn)
		ev(`"type":"turn/end","data":{"turn":%d,"reason":{"kind":"completed"}}}`, turn)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReplayPages renders testdata sessions with `dshtrace replay` and
// `dshtrace serve` and opens the pages in headless Chromium. Judged: every
// turn, call and row of a log is on its page; clicks go to the rows and
// source ranges they name; a log full of markup stays inert text; a long
// session is folded but for the linked turn; the served list and deep
// links work; no page requests anything outside itself.
func TestReplayPages(t *testing.T) {
	bin := dshtraceBin(t)
	ctx := browser(t)
	dir := t.TempDir()
	logs := filepath.Join("..", "testdata")
	pages := map[string]string{}
	for name, log := range map[string]string{
		"tools":  filepath.Join(logs, "dialects", "v4-tools.jsonl"),
		"v0":     filepath.Join(logs, "dialects", "v0-packed.jsonl"),
		"reason": filepath.Join(logs, "dialects", "v4-end-reasons.jsonl"),
		"markup": filepath.Join(logs, "hostile", "tolerated-markup.jsonl"),
	} {
		pages[name] = filepath.Join(dir, name+".html")
		if out, err := exec.Command(bin, "replay", "--jaeger", "http://127.0.0.1:16686", "-o", pages[name], log).CombinedOutput(); err != nil {
			t.Fatalf("replay %s: %v\n%s", log, err, out)
		}
	}
	var reqs requests
	reqs.listen(t, ctx)

	t.Run("every turn, call and row", func(t *testing.T) {
		for name, log := range map[string]string{"tools": "v4-tools", "v0": "v0-packed", "reason": "v4-end-reasons"} {
			do(t, ctx, "open "+name, chromedp.Navigate("file://"+pages[name]))
			if m := missing(t, ctx, want(t, filepath.Join(logs, "dialects", log+".jsonl"))); len(m) > 0 {
				t.Errorf("%s: the page lacks %v", name, m)
			}
		}
	})

	t.Run("click through", func(t *testing.T) {
		do(t, ctx, "open", chromedp.Navigate("file://"+pages["tools"]+"#turn-1"))
		highlighted(t, ctx, "turn-1")
		// A call by its id; the message a context row refers to; a row.
		do(t, ctx, "follow a call", chromedp.Click(chromedp.CSS(`.tc a[href="#call-call_2"]`)))
		highlighted(t, ctx, "call-call_2")
		do(t, ctx, "follow a reference", chromedp.Click(chromedp.CSS(`#step-1\.2 details.context > summary`)),
			chromedp.Click(chromedp.CSS(`#step-1\.2 .ref a`)))
		highlighted(t, ctx, "m-13")
		// A result's sources: one click shows the tool/call row it cites.
		do(t, ctx, "open the sources", chromedp.Click(chromedp.CSS(`#m-16 details.src > summary`)),
			chromedp.Click(chromedp.CSS(`#m-16 details.src a[data-lo="14"]`)))
		highlighted(t, ctx, "seq-14")
		if raw := eval[string](t, ctx, `document.querySelector('#seq-14 details.raw pre').textContent`); !strings.Contains(raw, `"callId":"call_1"`) {
			t.Errorf("the row's raw JSON: %q", raw)
		}
		// Fold and unfold a turn by its summary.
		do(t, ctx, "fold", chromedp.Click(chromedp.CSS(`#turn-1 > summary`)))
		if eval[bool](t, ctx, `document.getElementById('turn-1').open`) {
			t.Error("turn 1 did not fold")
		}
		do(t, ctx, "unfold", chromedp.Click(chromedp.CSS(`#turn-1 > summary`)))
		// The v0 page: a range of chunk rows (packed) highlighted at once.
		do(t, ctx, "open v0", chromedp.Navigate("file://"+pages["v0"]+"#m-34"),
			chromedp.Click(chromedp.CSS(`#m-34 details.src > summary`)),
			chromedp.Click(chromedp.CSS(`#m-34 details.src a[data-lo="9"]`)))
		highlighted(t, ctx, "seq-9")
		if n := eval[int](t, ctx, `document.querySelectorAll('.row.hl').length`); n < 5 {
			t.Errorf("the source range highlights %d rows", n)
		}
		screenshot(t, ctx, "replay-v0-sources.png", false)
		do(t, ctx, "open tools", chromedp.Navigate("file://"+pages["tools"]))
		screenshot(t, ctx, "replay-tools.png", true)
		do(t, ctx, "open reasons", chromedp.Navigate("file://"+pages["reason"]))
		screenshot(t, ctx, "replay-end-reasons.png", true)
		eval[bool](t, ctx, `(document.getElementById('turn-2').scrollIntoView(), true)`)
		screenshot(t, ctx, "replay-turn.png", false)
		do(t, ctx, "follow a nested call", chromedp.Navigate("file://"+pages["reason"]+"#call-prog_1:ptc:2"))
		highlighted(t, ctx, "call-prog_1:ptc:2")
		screenshot(t, ctx, "replay-nested-call.png", false)
	})

	t.Run("markup log inert", func(t *testing.T) {
		do(t, ctx, "open", chromedp.Navigate("file://"+pages["markup"]))
		do(t, ctx, "unfold everything", chromedp.Click(chromedp.CSS(`button[data-act="open"]`)))
		eval[bool](t, ctx, `(document.querySelectorAll('details').forEach(d => d.open = true), true)`)
		time.Sleep(500 * time.Millisecond)
		if got := eval[string](t, ctx, `typeof window.__pwned`); got != "undefined" {
			t.Errorf("the log's script ran: window.__pwned is %s", got)
		}
		for sel, n := range map[string]int{"script": 1, "img": 0, "svg": 0, "iframe": 0, "b[onmouseover]": 0, "[onclick],[onerror],[onload]": 0} {
			if got := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)); got != n {
				t.Errorf("%d %s elements on the page, want %d", got, sel, n)
			}
		}
		text := eval[string](t, ctx, `document.body.innerText`)
		for _, s := range []string{"<script>window.__pwned=1</script>", `"><img src=x onerror="window.__pwned=1">`, "{{.}}<!--"} {
			if !strings.Contains(text, s) {
				t.Errorf("the page does not show %q as text", s)
			}
		}
		screenshot(t, ctx, "replay-markup.png", true)
	})

	t.Run("folded long session", func(t *testing.T) {
		long := filepath.Join(dir, "long.jsonl")
		longSession(t, long, 400)
		page := filepath.Join(dir, "long.html")
		if out, err := exec.Command(bin, "replay", "-o", page, long).CombinedOutput(); err != nil {
			t.Fatalf("replay: %v\n%s", err, out)
		}
		// Turn 300's call result row, deep in a folded turn.
		seq := 299*11 + 5
		start := time.Now()
		do(t, ctx, "open a deep link", chromedp.Navigate(fmt.Sprintf("file://%s#seq-%d", page, seq)))
		highlighted(t, ctx, fmt.Sprintf("seq-%d", seq))
		t.Logf("400 folded turns: the row of a deep link shown after %v", time.Since(start))
		if n := eval[int](t, ctx, `document.querySelectorAll('details.turn[data-folded]').length`); n != 399 {
			t.Errorf("%d turns still folded, want 399 (one unfolded for the link)", n)
		}
		do(t, ctx, "follow a call", chromedp.Evaluate[chromedp.Void](`location.hash = '#call-c42'`))
		highlighted(t, ctx, "call-c42")
		screenshot(t, ctx, "replay-folded.png", false)
	})

	if out := reqs.outside("file://"); len(out) > 0 {
		t.Errorf("pages opened from files requested %v", out)
	}

	t.Run("served", func(t *testing.T) {
		root := filepath.Join(dir, "root")
		for _, name := range []string{"v4-tools", "v0-packed", "v4-end-reasons", "crash-repaired", "open-turn"} {
			b, err := os.ReadFile(filepath.Join(logs, "dialects", name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			id := sessionID(t, b)
			d := filepath.Join(root, "--w--", sessionroot.EscapeSessionID(id))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "session.jsonl"), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		longSession(t, filepath.Join(dir, "long.v4.jsonl"), 250)
		d := filepath.Join(root, "--w--", "long-session")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "long.v4.jsonl"), filepath.Join(d, "session.v4.jsonl")); err != nil {
			t.Fatal(err)
		}
		base := serve(t, bin, root)
		var served requests
		served.listen(t, ctx)
		do(t, ctx, "open the list", chromedp.Navigate(base+"/"))
		if n := eval[int](t, ctx, `document.querySelectorAll('table.list tbody tr').length`); n != 6 {
			t.Errorf("the list shows %d sessions, want 6", n)
		}
		screenshot(t, ctx, "replay-list.png", false)
		do(t, ctx, "filter by end reason", chromedp.Navigate(base+"/?reason=dangling"))
		if n := eval[int](t, ctx, `document.querySelectorAll('table.list tbody tr').length`); n != 1 {
			t.Errorf("the list of sessions with a dangling turn shows %d", n)
		}
		do(t, ctx, "open a session from the list", chromedp.Navigate(base+"/"),
			chromedp.Click(chromedp.CSS(`a[href="/s/9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#turn-1`)))
		if m := missing(t, ctx, want(t, filepath.Join(logs, "dialects", "v4-tools.jsonl"))); len(m) > 0 {
			t.Errorf("the served page lacks %v", m)
		}
		// A link into another page of a long session: the page finds it.
		do(t, ctx, "deep link", chromedp.Navigate(base+"/s/long-session#turn-230"))
		highlighted(t, ctx, "turn-230")
		if loc := eval[string](t, ctx, `location.search`); !strings.Contains(loc, "find=turn-230") {
			t.Errorf("the deep link landed at %q", loc)
		}
		screenshot(t, ctx, "replay-served.png", false)
		if out := served.outside(base); len(out) > 0 {
			t.Errorf("served pages requested %v", out)
		}
	})
}

// sessionID is a session file's header id.
func sessionID(t *testing.T, log []byte) string {
	t.Helper()
	m := regexp.MustCompile(`^\{"type":"session","version":\d,"id":"([^"]+)"`).FindSubmatch(log)
	if m == nil {
		t.Fatal("no header")
	}
	return string(m[1])
}

// serve runs `dshtrace serve` on a free loopback port and returns its URL.
func serve(t *testing.T, bin, root string, flags ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string{"serve", "--addr", "127.0.0.1:0"}, flags...), root)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("serve: %v", err)
	}
	u := regexp.MustCompile(`http://[0-9.:]+`).FindString(line)
	if u == "" {
		t.Fatalf("serve said %q", line)
	}
	return u
}

// TestReplayFromJaeger: both ways between the traces and the pages. Jaeger
// (its UI configured with e2e/jaeger-ui.json, as `make demo` does) shows on
// a turn's span a link, from gen_ai.conversation.id and dsh.turn, that
// opens the served page at that turn; the page links the turn back to its
// trace. The spans come from `dshtrace spans --otlp-endpoint`: no collector
// is needed.
func TestReplayFromJaeger(t *testing.T) {
	assets := uiAssets(t)
	bin := dshtraceBin(t)
	ctx := browser(t)
	dir := t.TempDir()

	log := filepath.Join("..", "testdata", "dialects", "v4-tools.jsonl")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	id := sessionID(t, b)
	d := filepath.Join(dir, "root", "--w--", sessionroot.EscapeSessionID(id))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "session.v4.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}

	j := newJaegerPorts(t)
	jaegerQuery := j.query()
	replay := serve(t, bin, filepath.Join(dir, "root"), "--jaeger", jaegerQuery)
	// The repository's link patterns, pointed at this test's server.
	patterns, err := os.ReadFile("jaeger-ui.json")
	if err != nil {
		t.Fatal(err)
	}
	uiConfig := filepath.Join(dir, "jaeger-ui.json")
	if err := os.WriteFile(uiConfig, []byte(strings.ReplaceAll(string(patterns), "http://127.0.0.1:17788", replay)), 0o644); err != nil {
		t.Fatal(err)
	}
	startJaeger(t, dir, "jaeger", j, "--set=extensions::jaeger_query::ui::assets_path="+assets,
		"--set=extensions::jaeger_query::ui::config_file="+uiConfig)
	if out, err := exec.Command(bin, "spans", "--otlp-endpoint", j.otlpHTTPURL(), log).CombinedOutput(); err != nil {
		t.Fatalf("spans: %v\n%s", err, out)
	}
	trace := strings.Fields(strings.SplitN(run(t, bin, "spans", log), "\n", 2)[0])[1]

	// Jaeger → the page: the turn span's conversation id links to the turn.
	do(t, ctx, "open the trace", chromedp.Navigate(jaegerQuery+"/trace/"+trace),
		chromedp.Click(chromedp.CSS(`.span-name`)), chromedp.Click(chromedp.CSS(`.AccordianKeyValues--header`)))
	want := replay + "/s/" + id + "?turn=1#turn-1"
	links := eval[[]string](t, ctx, `Array.from(document.querySelectorAll('a[href*="/s/"]'), a => a.href)`)
	if !slices.Contains(links, want) {
		t.Fatalf("the trace page links %v, want %s", links, want)
	}
	screenshot(t, ctx, "replay-jaeger-link.png", false)
	do(t, ctx, "follow the link", chromedp.Navigate(want))
	highlighted(t, ctx, "turn-1")
	// The page → Jaeger: the turn links to its trace.
	back := eval[string](t, ctx, `document.querySelector('#turn-1 a[href*="/trace/"]').href`)
	if back != jaegerQuery+"/trace/"+trace {
		t.Errorf("the page links the turn to %q, want %s", back, jaegerQuery+"/trace/"+trace)
	}
}

// run runs a command and returns its output.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return string(out)
}
