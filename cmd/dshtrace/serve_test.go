package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// dialect is a repository log.
func dialect(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "dialects", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// put writes a session file under root, in the session directory of id.
func put(t *testing.T, root, id, file string, body []byte) string {
	t.Helper()
	dir := filepath.Join(root, "--w--", sessionroot.EscapeSessionID(id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// get fetches a path of the server; redirects are not followed.
func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = path // sent as written: no cleaning, no re-escaping
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func startServer(t *testing.T, cfg serverConfig, roots ...string) *httptest.Server {
	t.Helper()
	s, err := newServer(roots, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv
}

// TestServeConfined: no request reaches a file outside the served root —
// not by dots, encoded dots or separators, absolute paths, nor a symbolic
// link inside the root — while a session whose id looks like a path is
// served from its own directory inside.
func TestServeConfined(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	secret := bytes.ReplaceAll(dialect(t, "v4-tools"), []byte("Read a.txt"), []byte("SECRET-OUTSIDE"))
	secretPath := put(t, outside, "secret", "session.v4.jsonl", secret)
	put(t, root, "inside", "session.v4.jsonl", dialect(t, "v4-tools"))
	// An id that reads like a path is a session like any other (its
	// directory is ..~002Fsecret, inside the root).
	pathLike := bytes.ReplaceAll(dialect(t, "v4-tools"), []byte(`"id":"9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"`), []byte(`"id":"../secret"`))
	put(t, root, "../secret", "session.v4.jsonl", pathLike)
	// Links out: a project directory, a session directory, a session file.
	must(t, os.Symlink(filepath.Join(outside, "--w--"), filepath.Join(root, "--linked--")))
	must(t, os.Symlink(filepath.Dir(secretPath), filepath.Join(root, "--w--", "linked-session")))
	must(t, os.MkdirAll(filepath.Join(root, "--w--", "linked-file"), 0o755))
	must(t, os.Symlink(secretPath, filepath.Join(root, "--w--", "linked-file", "session.v4.jsonl")))
	srv := startServer(t, serverConfig{}, root)

	for _, p := range []string{
		"/s/secret", "/s/..%2Fsecret", "/s/..%2F..%2F" + filepath.Base(outside) + "%2F--w--%2Fsecret",
		"/s/%2e%2e", "/s/%2e%2e%2fsecret", "/s/..%5Csecret", "/s/..%255Csecret", "/s/%252e%252e%252fsecret",
		"/s/" + strings.ReplaceAll(secretPath, "/", "%2F"), "/s/linked-session", "/s/linked-file", "/s/linked%2Dfile",
		"/s/../../" + filepath.Base(outside), "/../../etc/passwd", "/s/inside/../../secret", "/s/%00",
	} {
		code, body := get(t, srv, p)
		if strings.Contains(body, "SECRET-OUTSIDE") {
			t.Errorf("GET %s (%d) served the file outside the root", p, code)
		}
		if code == http.StatusOK && !strings.Contains(body, `<code>../secret</code>`) {
			t.Errorf("GET %s: %d, want it refused", p, code)
		}
	}
	code, body := get(t, srv, "/s/%2e%2e%2fsecret")
	if code != http.StatusOK || !strings.Contains(body, "Read a.txt") || strings.Contains(body, "SECRET-OUTSIDE") {
		t.Errorf("the session ../secret: %d, want its own page from inside the root", code)
	}
	_, list := get(t, srv, "/")
	if strings.Contains(list, "linked") || strings.Count(list, `<td class="id">`) != 2 {
		t.Errorf("the list shows a linked session or misses one:\n%s", list)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestServeEveryDialect: every dialect, plain or zstd, and a
// session_archive-style second root are served, listed and paged.
func TestServeEveryDialect(t *testing.T) {
	root, archive := t.TempDir(), t.TempDir()
	logs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "dialects", "*.jsonl"))
	must(t, err)
	for _, l := range logs {
		b, err := os.ReadFile(l)
		must(t, err)
		put(t, root, strings.TrimSuffix(filepath.Base(l), ".jsonl"), "session.jsonl", b)
	}
	enc, err := zstd.NewWriter(nil)
	must(t, err)
	put(t, archive, "zstd-session", "session.v4.jsonl.zstd", enc.EncodeAll(dialect(t, "v4-end-reasons"), nil))
	srv := startServer(t, serverConfig{Jaeger: "http://127.0.0.1:16686"}, root, archive)

	_, list := get(t, srv, "/")
	for _, l := range append(logs, "zstd-session") {
		id := strings.TrimSuffix(filepath.Base(l), ".jsonl")
		if !strings.Contains(list, `href="/s/`+id+`"`) {
			t.Errorf("the list does not link %s", id)
			continue
		}
		code, page := get(t, srv, "/s/"+id)
		if code != http.StatusOK || !strings.Contains(page, `id="turn-1"`) {
			t.Errorf("session %s: %d, no turn 1:\n%.300s", id, code, page)
		}
	}
	if _, page := get(t, srv, "/s/zstd-session"); !strings.Contains(page, "http://127.0.0.1:16686/trace/") || !strings.Contains(page, "SERVICE_UNAVAILABLE") {
		t.Errorf("the zstd session's page lacks its trace links or its error")
	}
	for _, tt := range []struct{ query, want, not string }{
		{"?reason=dangling", "open-turn", "v4-tools"},
		{"?q=WRAP-JSON", "wrap-jsonrpc", "open-turn"},
		{"?agent=nobody", "No session matches", "open-turn"},
	} {
		_, l := get(t, srv, "/"+tt.query)
		if !strings.Contains(l, tt.want) || strings.Contains(l, `href="/s/`+tt.not+`"`) {
			t.Errorf("list %s: want %q listed and not %q", tt.query, tt.want, tt.not)
		}
	}
	if code, _ := get(t, srv, "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing: %d", code)
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405: the server is read-only", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/s/v4-tools")
	must(t, err)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// TestServeReloadShowsNewRows: a session being written shows its new rows
// on reload, and never the row still being written.
func TestServeReloadShowsNewRows(t *testing.T) {
	root := t.TempDir()
	all := dialect(t, "v4-tools")
	lines := bytes.SplitAfter(all, []byte("\n"))
	first := bytes.Join(lines[:10], nil)
	torn := lines[10][:20]
	p := put(t, root, "live", "session.v4.jsonl", append(bytes.Clone(first), torn...))
	srv := startServer(t, serverConfig{}, root)
	_, page := get(t, srv, "/s/live")
	if !strings.Contains(page, `id="seq-8"`) || strings.Contains(page, `id="seq-9"`) {
		t.Fatalf("first read: want rows through seq 8 and not the one being written")
	}
	must(t, os.WriteFile(p, all, 0o644))
	// A later modification time, whatever the file system's resolution.
	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(p, later, later))
	_, page = get(t, srv, "/s/live")
	if !strings.Contains(page, `id="seq-23"`) || !strings.Contains(page, "a.txt says hello") {
		t.Fatalf("after the session grew: its new rows are not on the page")
	}
}

// TestServePages: a session of many turns is served a page of turns at a
// time; a link to a turn, a row or a call finds its page.
func TestServePages(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"type":"session","version":4,"id":"long","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n")
	seq := 0
	for turn := 1; turn <= 25; turn++ {
		fmt.Fprintf(&b, `{"type":"turn/start","seq":%d,"time":%d,"data":{"turn":%d}}`+"\n", seq, 10*turn, turn)
		fmt.Fprintf(&b, `{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":%d,"reason":{"kind":"completed"}}}`+"\n", seq+1, 10*turn+1, turn)
		seq += 2
	}
	put(t, root, "long", "session.v4.jsonl", []byte(b.String()))
	srv := startServer(t, serverConfig{TurnsPerPage: 10}, root)
	for _, tt := range []struct{ query, has, hasNot string }{
		{"", `id="turn-10"`, `id="turn-11"`},
		{"?page=2", `id="turn-11"`, `id="turn-10"`},
		{"?turn=25", `id="turn-25"`, `id="turn-20"`},
		{"?find=turn-17", `id="turn-17"`, `id="turn-1"`},
		{"?find=seq-33", `id="seq-33"`, `id="turn-1"`},
	} {
		_, page := get(t, srv, "/s/long"+tt.query)
		if !strings.Contains(page, tt.has) || strings.Contains(page, tt.hasNot) {
			t.Errorf("/s/long%s: want %s and not %s", tt.query, tt.has, tt.hasNot)
		}
		if !strings.Contains(page, `data-find="/s/long?find="`) || !strings.Contains(page, "21–25") {
			t.Errorf("/s/long%s: no pager or no find link", tt.query)
		}
	}
	// What names nothing is not found, and says so.
	for query, want := range map[string]string{
		"?find=nothing": `session "long" has no element "nothing"`,
		"?find=":        `session "long" has no element ""`,
		"?turn=26":      `session "long" has no turn "26" (25 turns)`,
		"?turn=":        `session "long" has no turn "" (25 turns)`,
		"?turn=-1":      `session "long" has no turn "-1" (25 turns)`,
		"?page=4":       `session "long" has no page "4" (3 pages of up to 10 turns)`,
		"?page=0":       `session "long" has no page "0"`,
		"?page=x":       `session "long" has no page "x"`,
	} {
		code, body := get(t, srv, "/s/long"+query)
		if code != http.StatusNotFound || !strings.HasPrefix(body, want) {
			t.Errorf("/s/long%s: %d %q, want 404 and %q", query, code, body, want)
		}
	}
}

// lockedBuffer is a buffer written by a server goroutine and read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeLoopbackByDefault: without --addr the server listens on
// loopback only; told another address, it says who can read the sessions.
func TestServeLoopbackByDefault(t *testing.T) {
	host, _, err := net.SplitHostPort(defaultServeAddr)
	must(t, err)
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Fatalf("default address %s is not loopback", defaultServeAddr)
	}
	root := t.TempDir()
	put(t, root, "s", "session.v4.jsonl", dialect(t, "v4-tools"))
	for _, tt := range []struct {
		addr    string
		warning bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		ctx, cancel := context.WithCancel(context.Background())
		var stdout, stderr lockedBuffer
		done := make(chan error, 1)
		go func() {
			done <- serveUntil(ctx, &env{stdout: &stdout, stderr: &stderr}, []string{"--addr", tt.addr, root})
		}()
		var url string
		for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			url = regexp.MustCompile(`http://\S+/`).FindString(stdout.String())
		}
		if url == "" {
			cancel()
			t.Fatalf("--addr %s: the server did not say where it listens: %q %q", tt.addr, stdout.String(), stderr.String())
		}
		resp, err := http.Get(strings.Replace(url, "0.0.0.0", "127.0.0.1", 1) + "s/s")
		must(t, err)
		resp.Body.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("--addr %s: %v", tt.addr, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("--addr %s: GET /s/s: %d", tt.addr, resp.StatusCode)
		}
		if got := strings.Contains(stderr.String(), "not a loopback address"); got != tt.warning {
			t.Errorf("--addr %s: warning %v, want %v (stderr %q)", tt.addr, got, tt.warning, stderr.String())
		}
	}
	if code := run([]string{"serve"}, nil, io.Discard, io.Discard); code != 2 {
		t.Errorf("serve without a root: exit %d", code)
	}
	if code := run([]string{"serve", filepath.Join(root, "missing")}, nil, io.Discard, io.Discard); code != 2 {
		t.Errorf("serve of a missing root: exit %d", code)
	}
}

// TestJaegerLinkPatterns: the link patterns the repository gives the Jaeger
// UI (deploy/jaeger-ui.json for `serve` on its default address,
// e2e/jaeger-ui.json for `make demo`'s) open a turn's page at that turn:
// filled in as the UI fills them (values escaped with encodeURIComponent),
// their URLs find the session and the turn.
func TestJaegerLinkPatterns(t *testing.T) {
	root := t.TempDir()
	id := "a/b c?d#e" // escaped in the URL, not a path
	put(t, root, id, "session.v4.jsonl", bytes.ReplaceAll(dialect(t, "v4-end-reasons"),
		[]byte(`"id":"5e1d0c4b-3a29-4f18-8e07-d6c5b4a39281"`), []byte(`"id":"a/b c?d#e"`)))
	srv := startServer(t, serverConfig{TurnsPerPage: 1}, root)
	for file, addr := range map[string]string{
		filepath.Join("..", "..", "deploy", "jaeger-ui.json"): defaultServeAddr,
		filepath.Join("..", "..", "e2e", "jaeger-ui.json"):    "127.0.0.1:17788",
	} {
		var cfg struct {
			LinkPatterns []struct{ Type, Key, URL, Text string } `json:"linkPatterns"`
		}
		b, err := os.ReadFile(file)
		must(t, err)
		must(t, json.Unmarshal(b, &cfg))
		tags := map[string]string{"gen_ai.conversation.id": id, "dsh.turn": "3", "session.id": id}
		found := 0
		for _, p := range cfg.LinkPatterns {
			u := regexp.MustCompile(`#\{([^}]+)\}`).ReplaceAllStringFunc(p.URL, func(m string) string {
				return encodeURIComponent(tags[m[2:len(m)-1]])
			})
			rest, ok := strings.CutPrefix(u, "http://"+addr)
			if !ok {
				t.Errorf("%s: %s links to %s, not to the server at %s", file, p.Key, u, addr)
				continue
			}
			path, fragment, _ := strings.Cut(rest, "#")
			code, page := get(t, srv, path)
			if code != http.StatusOK || !strings.Contains(page, `id="turn-1"`) && fragment == "" {
				t.Errorf("%s: %s: GET %s: %d", file, p.Key, path, code)
			}
			if fragment != "" {
				found++
				if fragment != "turn-3" || !strings.Contains(page, `id="turn-3"`) || strings.Contains(page, `id="turn-1"`) {
					t.Errorf("%s: %s: %s does not open turn 3's page at the turn (fragment %q)", file, p.Key, u, fragment)
				}
			}
		}
		if found == 0 {
			t.Errorf("%s: no pattern links a turn", file)
		}
	}
}

// encodeURIComponent escapes as the browser function of that name does
// (the Jaeger UI escapes link values with it).
func encodeURIComponent(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TestServeSubagents: a subagent session under the root (its header names
// the session as its parent) is linked from the session's page at the call
// in flight when it was created, and links back to its parent.
func TestServeSubagents(t *testing.T) {
	root := t.TempDir()
	const parent = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
	put(t, root, parent, "session.v4.jsonl", dialect(t, "v4-tools"))
	child := bytes.Replace(dialect(t, "v4-end-reasons"),
		[]byte(`"id":"5e1d0c4b-3a29-4f18-8e07-d6c5b4a39281","createdAt":1789500000000`),
		[]byte(`"id":"helper-1","createdAt":1788000000425,"parentSession":"`+parent+`","origin":"subagent"`), 1)
	child = bytes.Replace(child, []byte(`"delegationDepth":0`), []byte(`"delegationDepth":1`), 1)
	put(t, root, "helper-1", "session.v4.jsonl", child)
	srv := startServer(t, serverConfig{}, root)

	_, page := get(t, srv, "/s/"+parent)
	call := regexp.MustCompile(`(?s)<div class="call" id="call-call_2">.*?</div>`).FindString(page)
	if !strings.Contains(call, `href="/s/helper-1"`) {
		t.Errorf("call_2 (in flight when helper-1 was created) does not link it:\n%s", call)
	}
	if !strings.Contains(page, `<dt>Subagents</dt><dd><a href="/s/helper-1"><code>helper-1</code></a> (<a href="#call-call_2">the call</a>)</dd>`) {
		t.Errorf("the session's header does not list its subagent")
	}
	_, page = get(t, srv, "/s/helper-1")
	if !strings.Contains(page, `<dt>Started by</dt><dd><a href="/s/`+parent+`">`) {
		t.Errorf("the subagent's page does not link its parent")
	}
}
