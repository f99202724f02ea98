package main

import (
	"bufio"
	"context"
	"errors"
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
	"syscall"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/cmd/dshtrace/internal/replay"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
)

// getHost fetches a path of the server with the Host header host.
func getHost(t *testing.T, srv *httptest.Server, path, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	must(t, err)
	req.Host = host
	resp, err := srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeHostCheck: a request naming another host (DNS rebinding) is
// refused with 421 and a line; loopback's names and addresses, and the
// names given, are answered.
func TestServeHostCheck(t *testing.T) {
	root := t.TempDir()
	put(t, root, "s", "session.v4.jsonl", dialect(t, "v4-tools"))
	srv := startServer(t, serverConfig{AllowHosts: []string{"box.lan"}}, root)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	for host, want := range map[string]int{
		"evil.example": http.StatusMisdirectedRequest, "evil.example:" + port: http.StatusMisdirectedRequest,
		"localhost.evil.example": http.StatusMisdirectedRequest, "10.1.2.3": http.StatusMisdirectedRequest,
		"127.0.0.1:" + port: http.StatusOK, "localhost:" + port: http.StatusOK, "LOCALHOST.": http.StatusOK,
		"[::1]:" + port: http.StatusOK, "box.lan:7788": http.StatusOK, "box.lan": http.StatusOK,
	} {
		for _, path := range []string{"/", "/s/s"} {
			code, body := getHost(t, srv, path, host)
			if code != want {
				t.Errorf("Host %s, GET %s: %d, want %d", host, path, code, want)
			}
			if code == http.StatusMisdirectedRequest && (strings.Contains(body, "Read a.txt") || !strings.Contains(body, "not for the host")) {
				t.Errorf("Host %s: %q", host, body)
			}
		}
	}
	// Listening on one address of the network, or on all of them.
	lan := newHostCheck(nil)
	(&server{hosts: lan}).listenOn(&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 7788})
	all := newHostCheck(nil)
	(&server{hosts: all}).listenOn(&net.TCPAddr{IP: net.IPv4zero, Port: 7788})
	name, _ := os.Hostname()
	for _, tt := range []struct {
		h    *hostCheck
		host string
		ok   bool
	}{
		{lan, "192.0.2.7:7788", true}, {lan, "localhost:7788", false}, {lan, "evil.example", false},
		{all, "127.0.0.1:7788", true}, {all, "localhost", true}, {all, name + ":7788", name != ""}, {all, "evil.example", false},
	} {
		if _, ok := tt.h.allowed(tt.host); ok != tt.ok {
			t.Errorf("%s: allowed %v, want %v", tt.host, ok, tt.ok)
		}
	}
}

// TestServeBuildsOncePerPage: many requests for one page at once build it
// once; the page is then kept, and rebuilt only when its file changes.
func TestServeBuildsOncePerPage(t *testing.T) {
	root := t.TempDir()
	file := put(t, root, "long", "session.v4.jsonl", []byte(testlog.Synth("long", 2000, 2, false)))
	s, err := newServer([]string{root}, serverConfig{})
	must(t, err)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := http.Get(srv.URL + "/s/long")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET: %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	if n := s.builds.Load(); n != 1 {
		t.Errorf("8 requests at once: %d builds, want 1", n)
	}
	get(t, srv, "/s/long")
	if n := s.builds.Load(); n != 1 {
		t.Errorf("the page again: %d builds, want it kept", n)
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	fmt.Fprintf(f, `{"type":"turn/start","seq":%d,"time":1900000000000,"data":{"turn":2001}}`+"\n", 2000*12+2000)
	f.Close()
	must(t, os.Chtimes(file, time.Now(), time.Now().Add(time.Second)))
	if _, page := get(t, srv, "/s/long"); !strings.Contains(page, `id="turn-2001"`) && !strings.Contains(page, "2001–2001") {
		t.Errorf("the changed file's new turn is not on the page")
	}
	if n := s.builds.Load(); n != 2 {
		t.Errorf("after the file changed: %d builds, want 2", n)
	}
	if used, pages := s.pages.usage(); pages != 1 || used <= 0 || used > defaultPageMemory {
		t.Errorf("kept %d pages in %d bytes, want the latest one only", pages, used)
	}
}

// TestServePageMemory: a page that cannot fit the memory for pages is
// refused with a line saying why and what to do; pages kept are evicted to
// make room, never beyond the budget; a page in use is not freed under its
// reader.
func TestServePageMemory(t *testing.T) {
	root := t.TempDir()
	put(t, root, "big", "session.v4.jsonl", []byte(testlog.Synth("big", 3000, 2, false)))
	put(t, root, "a", "session.v4.jsonl", []byte(testlog.Synth("a", 300, 2, false)))
	put(t, root, "b", "session.v4.jsonl", []byte(testlog.Synth("b", 300, 2, false)))
	s, err := newServer([]string{root}, serverConfig{MaxPageMemory: 8 << 20})
	must(t, err)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	code, body := get(t, srv, "/s/big")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "needs more than the 8 MiB serve may use for pages (--max-page-memory)") ||
		!strings.Contains(body, "dshtrace replay -o") {
		t.Errorf("a page beyond the budget: %d %q", code, body)
	}
	for _, id := range []string{"a", "b", "a", "b"} {
		if code, _ := get(t, srv, "/s/"+id); code != http.StatusOK {
			t.Errorf("/s/%s: %d", id, code)
		}
		if used, _ := s.pages.usage(); used > 8<<20 {
			t.Errorf("after /s/%s: %d bytes reserved, beyond the budget", id, used)
		}
	}
	// The list builds what it can and says why it could not build the rest.
	if code, list := get(t, srv, "/"); code != http.StatusOK || !strings.Contains(list, "--max-page-memory") {
		t.Errorf("the list: %d, and does not say why big has no line", code)
	}
	// A page in use stays reserved until its reader is done.
	ps := newPageStore(100)
	build := func(size int64) func(func(int64) error) (*replay.Page, error) {
		return func(grow func(int64) error) (*replay.Page, error) { return nil, grow(size) }
	}
	_, releaseA, err := ps.get("a", "1", true, build(60))
	must(t, err)
	if _, _, err := ps.get("b", "1", true, build(60)); !errors.Is(err, errPagesBusy) {
		t.Errorf("b while a is read: %v, want busy", err)
	}
	releaseA()
	_, releaseB, err := ps.get("b", "1", true, build(60))
	must(t, err)
	releaseB()
	if used, pages := ps.usage(); used != 60 || pages != 1 {
		t.Errorf("after a went idle and b was built: %d used, %d pages; want 60 and 1", used, pages)
	}
}

// TestServeCachesOnePerFile: list lines and headers are kept one per file,
// however often a session being written changes.
func TestServeCachesOnePerFile(t *testing.T) {
	root := t.TempDir()
	log := testlog.Synth("w", 5, 1, true)
	file := put(t, root, "w", "session.v4.jsonl", []byte(log))
	put(t, root, "other", "session.v4.jsonl", dialect(t, "v4-tools"))
	s, err := newServer([]string{root}, serverConfig{})
	must(t, err)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	defer f.Close()
	for i := range 30 {
		fmt.Fprintf(f, `{"type":"todo/write","seq":%d,"time":1900000000000,"data":{"turn":5,"todos":[]}}`+"\n", 5*5+4+i)
		must(t, os.Chtimes(file, time.Now(), time.Now().Add(time.Duration(i+1)*time.Second)))
		get(t, srv, "/")
		get(t, srv, "/s/other")
	}
	if n := s.summaries.len(); n != 2 {
		t.Errorf("%d list lines kept for 2 files", n)
	}
	if n := s.parents.len(); n != 2 {
		t.Errorf("%d headers kept for 2 files", n)
	}
	c := newFileCache[int](3)
	for i := range 10 {
		c.put(fmt.Sprint(i), fileVersion{}, i)
	}
	if _, ok := c.get("0", func(fileVersion) bool { return true }); ok || c.len() != 3 {
		t.Errorf("a cache of 3 holds %d, the first still there: %v", c.len(), ok)
	}
}

// TestServeFailureWithoutPaths: a session that cannot be shown answers 500
// with why, never the server's paths; the console has them.
func TestServeFailureWithoutPaths(t *testing.T) {
	root := t.TempDir()
	put(t, root, "bad", "session.v4.jsonl", []byte(`{"type":"session","version":9,"id":"bad","createdAt":0,"delegationDepth":0}`+"\n"))
	put(t, root, "empty", "session.v4.jsonl", nil)
	var console lockedBuffer
	s, err := newServer([]string{root}, serverConfig{Log: &console})
	must(t, err)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	for id, want := range map[string]string{"bad": "unsupported session format version 9", "empty": "no readable row"} {
		code, body := get(t, srv, "/s/"+id)
		if code != http.StatusInternalServerError || !strings.Contains(body, want) || strings.Contains(body, root) || strings.Contains(body, "--w--") {
			t.Errorf("/s/%s: %d %q", id, code, body)
		}
	}
	e := entry{root: 0}
	e.ID, e.Path = "x", "--w--/x/session.v4.jsonl"
	msg := s.failure(e, &os.PathError{Op: "open", Path: root + "/--w--/x/session.v4.jsonl", Err: syscall.EACCES})
	if strings.Contains(msg, root) || strings.Contains(msg, "--w--") || !strings.Contains(console.String(), root) {
		t.Errorf("told %q; console %q", msg, console.String())
	}
}

// TestServeTimeouts: a client that never finishes its request headers,
// and a keep-alive connection left idle, are closed.
func TestServeTimeouts(t *testing.T) {
	defer func(h, r, i time.Duration) { readHeaderTimeout, readTimeout, idleTimeout = h, r, i }(readHeaderTimeout, readTimeout, idleTimeout)
	readHeaderTimeout, readTimeout, idleTimeout = 200*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	root := t.TempDir()
	put(t, root, "s", "session.v4.jsonl", dialect(t, "v4-tools"))
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- serveUntil(ctx, &env{stdout: &stdout, stderr: &stderr}, []string{"--addr", "127.0.0.1:0", root})
	}()
	defer func() { cancel(); <-done }()
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`http://(\S+)/`).FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
		}
	}
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		return err == nil // EOF: the server closed it; a timeout is an error
	}
	slow, err := net.Dial("tcp", addr)
	must(t, err)
	defer slow.Close()
	fmt.Fprintf(slow, "GET / HTTP/1.1\r\nHost: %s\r\n", addr) // and never the end of the headers
	if !closedWithin(slow, 3*time.Second) {
		t.Errorf("a request whose headers never end is kept open")
	}
	idle, err := net.Dial("tcp", addr)
	must(t, err)
	defer idle.Close()
	fmt.Fprintf(idle, "GET /s/s HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	must(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /s/s: %d", resp.StatusCode)
	}
	if !closedWithin(idle, 3*time.Second) {
		t.Errorf("an idle keep-alive connection is kept open")
	}
}

// TestServeSaysWhatRootHolds: a root without sessions is said on the
// console with what serve looked for and found instead; a file is no
// root.
func TestServeSaysWhatRootHolds(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	loose := filepath.Join(dir, "loose")
	must(t, os.MkdirAll(empty, 0o755))
	must(t, os.MkdirAll(loose, 0o755))
	must(t, os.WriteFile(filepath.Join(loose, "a.jsonl"), dialect(t, "v4-tools"), 0o644))
	root := filepath.Join(dir, "root")
	file := put(t, root, "s", "session.v4.jsonl", dialect(t, "v4-tools"))
	project, session := filepath.Join(root, "--w--"), filepath.Dir(file)
	for r, want := range map[string]string{
		empty:   "it is empty",
		loose:   "found instead 1 loose session log (a.jsonl): dshtrace replay FILE shows one",
		project: "it is a project directory (sessions right under it): serve its parent, " + root,
		session: "it is a session directory: serve " + root + ", or replay the file with dshtrace replay",
		root:    "",
	} {
		got := describeRoot(r)
		if want == "" && got != "" || !strings.HasSuffix(got, want) ||
			want != "" && !strings.Contains(got, "holds no session (looked for ROOT/<project>/<session>/session[.vN].jsonl[.zstd])") {
			t.Errorf("%s: %q, want …%q", r, got, want)
		}
	}
	if code, _, errs := runCLI(t, "", "serve", file); code != 2 || !strings.Contains(errs, "is a file, not a directory") {
		t.Errorf("serve FILE: exit %d, %q", code, errs)
	}
}
