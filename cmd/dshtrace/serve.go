package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dshtrace/dshtrace/cmd/dshtrace/internal/replay"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// defaultServeAddr is where `serve` listens unless told: loopback only.
const defaultServeAddr = "127.0.0.1:7788"

// runServe serves the replay pages of every session under one or more
// dsh session roots (or session_archive roots, the same layout), read-only,
// until interrupted.
func runServe(e *env, args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(ctx, e, args)
}

// serveUntil is runServe until ctx ends.
func serveUntil(ctx context.Context, e *env, args []string) error {
	fs := newFlags("serve")
	addr := fs.String("addr", defaultServeAddr, "listen on `HOST:PORT` (a non-loopback host serves the sessions to the network)")
	jaeger := fs.String("jaeger", "", "link each turn to its trace in the Jaeger UI at `URL`")
	noContent := fs.Bool("no-content", false, "leave out every message and tool payload and what the user wrote (working directory included)")
	perPage := fs.Int("turns-per-page", defaultTurnsPerPage, "show a long session `N` turns at a time")
	memory := fs.Int64("max-page-memory", defaultPageMemory>>20, "the memory, in `MiB`, that pages being built and kept may take in all; a page that cannot fit is refused")
	var hosts hostList
	fs.Var(&hosts, "allow-host", "answer requests for host `NAME` too (repeat or comma-separate; the listening address, and on loopback localhost, are always answered)")
	roots, err := parseArgs(e, fs, args, someRoots)
	if err != nil {
		return err
	}
	if err := checkJaeger(*jaeger); err != nil {
		return &exitError{code: 2, err: err}
	}
	if *perPage < 1 {
		return &exitError{code: 2, err: fmt.Errorf("--turns-per-page %d: want 1 or more", *perPage)}
	}
	if *memory < 1 || *memory > 1<<30 {
		return &exitError{code: 2, err: fmt.Errorf("--max-page-memory %d: want a number of MiB, 1 or more", *memory)}
	}
	srv, err := newServer(roots, serverConfig{Jaeger: *jaeger, NoContent: *noContent, TurnsPerPage: *perPage,
		MaxPageMemory: *memory << 20, AllowHosts: hosts, Log: e.stderr})
	if err != nil {
		return err
	}
	defer srv.Close()
	for _, r := range roots {
		if note := describeRoot(r); note != "" {
			fmt.Fprintf(e.stderr, "dshtrace serve: note: %s\n", note)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %v", *addr, unwrapNet(err))
	}
	if !isLoopback(ln.Addr()) {
		fmt.Fprintf(e.stderr, "dshtrace serve: %s is not a loopback address: anyone who reaches it reads these sessions\n", ln.Addr())
	}
	srv.listenOn(ln.Addr())
	fmt.Fprintf(e.stdout, "serving the sessions of %s on %s\n", strings.Join(roots, ", "), openURL(ln.Addr()))
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// Answer what is under way; a browser's idle and speculative
	// connections are closed after a moment.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if hs.Shutdown(sctx) != nil {
		hs.Close()
	}
	return nil
}

// unwrapNet is a listen error without the operation's prefix.
func unwrapNet(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe.Err
	}
	return err
}

// openURL is the URL a person opens to reach a listener: on an
// unspecified address (0.0.0.0, ::), this machine's loopback and, when
// known, its name.
func openURL(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return "http://" + a.String() + "/"
	}
	port := strconv.Itoa(ta.Port)
	u := "http://127.0.0.1:" + port + "/ (all interfaces"
	if h, err := os.Hostname(); err == nil && h != "" {
		u += "; from elsewhere http://" + net.JoinHostPort(h, port) + "/"
	}
	return u + ")"
}

// isLoopback reports whether a listener's address is on loopback only.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// defaultTurnsPerPage is how many turns one page of a long session shows.
const defaultTurnsPerPage = 100

// defaultPageMemory is the memory pages may take unless told: about the
// page of a 500,000-row session (replay.Estimate).
const defaultPageMemory = 512 << 20

// The server's connection limits: a request has its headers within
// readHeaderTimeout and its whole self within readTimeout (a GET has no
// body worth waiting for); a response is written within writeTimeout (a
// page of a long session to a slow reader holds its memory meanwhile); a
// keep-alive connection waits idleTimeout for its next request. (Tests
// shorten them.)
var (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 5 * time.Minute
	idleTimeout       = 60 * time.Second
)

// maxHeaderBytes bounds a request's headers.
const maxHeaderBytes = 64 << 10

// maxCachedFiles bounds the list lines and headers kept, one per file.
const maxCachedFiles = 20000

// serverConfig shapes a server.
type serverConfig struct {
	Jaeger       string
	NoContent    bool
	TurnsPerPage int
	// MaxPageMemory is the budget of the pages being built and kept, in
	// bytes (zero: defaultPageMemory).
	MaxPageMemory int64
	// AllowHosts are host names answered besides the listening address's.
	AllowHosts []string
	// Log is where failures the browser is not told in full are written
	// (nil: nowhere).
	Log io.Writer
}

// server serves the sessions of its roots. Every file it opens is one the
// roots' listing found (no symbolic link followed), opened through an
// os.Root: a request names a session by its id, looked up in that listing,
// never joined into a path.
type server struct {
	cfg   serverConfig
	roots []servedRoot
	mux   *http.ServeMux

	hosts     *hostCheck
	pages     *pageStore
	summaries *fileCache[replay.ListEntry]
	parents   *fileCache[parentLink]
	// builds counts the pages built, list lines' included.
	builds atomic.Int64
}

// servedRoot is one session root.
type servedRoot struct {
	path string
	dir  *os.Root
}

// entry is one session found under a root.
type entry struct {
	root int
	sessionroot.Session
}

// file names an entry's file: its root and path.
func (e entry) file() string { return strconv.Itoa(e.root) + "\x00" + e.Path }

// version is the file as it is now: a changed file is another version.
func (e entry) version() fileVersion { return fileVersion{e.Size, e.ModTime.UnixNano()} }

// versionKey is version as a string.
func (e entry) versionKey() string {
	return strconv.FormatInt(e.Size, 10) + "\x00" + strconv.FormatInt(e.ModTime.UnixNano(), 10)
}

func newServer(roots []string, cfg serverConfig) (*server, error) {
	if cfg.TurnsPerPage <= 0 {
		cfg.TurnsPerPage = defaultTurnsPerPage // a server made by a test
	}
	if cfg.MaxPageMemory <= 0 {
		cfg.MaxPageMemory = defaultPageMemory
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	s := &server{cfg: cfg, hosts: newHostCheck(cfg.AllowHosts), pages: newPageStore(cfg.MaxPageMemory),
		summaries: newFileCache[replay.ListEntry](maxCachedFiles), parents: newFileCache[parentLink](maxCachedFiles)}
	for _, r := range roots {
		if fi, err := os.Stat(r); err == nil && !fi.IsDir() {
			s.Close()
			return nil, fmt.Errorf("session root %s: is a file, not a directory (dshtrace replay FILE shows one log)", r)
		}
		dir, err := os.OpenRoot(r)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("session root %s: %v", r, unwrapPath(err))
		}
		s.roots = append(s.roots, servedRoot{path: r, dir: dir})
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.list)
	s.mux.HandleFunc("GET /s/{id}", s.session)
	return s, nil
}

// Close closes the roots.
func (s *server) Close() {
	for _, r := range s.roots {
		r.dir.Close()
	}
}

// ServeHTTP answers with the page's own policy and no caching: the pages
// hold personal data and change while sessions are written.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if msg, ok := s.hosts.allowed(r.Host); !ok {
		http.Error(w, msg, http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", replay.Policy())
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// entries lists every session of every root, as the roots are now.
func (s *server) entries() []entry {
	var out []entry
	for i, r := range s.roots {
		list, err := sessionroot.List(r.path)
		if err != nil {
			continue
		}
		for _, ss := range list {
			out = append(out, entry{root: i, Session: ss})
		}
	}
	return out
}

// lookup finds client's session id (client "" for a root's own): in root
// (its index, when given), else the copy written last.
func (s *server) lookup(entries []entry, id, client, root string) (entry, bool) {
	var best entry
	found := false
	for _, e := range entries {
		if e.ID != id || e.Client != client || (root != "" && strconv.Itoa(e.root) != root) {
			continue
		}
		if !found || e.ModTime.After(best.ModTime) {
			best, found = e, true
		}
	}
	return best, found
}

// url is a session's page; with its client's name when a client wrote it,
// and the root when the client's id is in several.
func (s *server) url(entries []entry, e entry) string {
	u := "/s/" + url.PathEscape(e.ID)
	q := url.Values{}
	if e.Client != "" {
		q.Set("client", e.Client)
	}
	copies := 0
	for _, o := range entries {
		if o.ID == e.ID && o.Client == e.Client {
			copies++
		}
	}
	if copies > 1 {
		q.Set("root", strconv.Itoa(e.root))
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// build reads a session's file and builds its page (without content when
// noContent), telling grow its estimated memory as it goes.
func (s *server) build(e entry, noContent bool, grow func(int64) error) (*replay.Page, error) {
	s.builds.Add(1)
	f, err := sessionroot.OpenComplete(s.roots[e.root].dir, e.Path, e.Zstd)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	in, err := newInput(path.Base(e.Path), f, "", nil, true)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	return replay.BuildRows(in, replay.Options{Name: e.Path, Session: e.ID, Client: e.Client, NoContent: noContent, Grow: grow})
}

// page is a session's page, built once while its file is unchanged
// however many ask; release gives it back.
func (s *server) page(e entry) (p *replay.Page, release func(), err error) {
	return s.pages.get(e.file(), e.versionKey(), true, func(grow func(int64) error) (*replay.Page, error) {
		return s.build(e, s.cfg.NoContent, grow)
	})
}

// summarize is a session's list entry, read once while its file is
// unchanged.
func (s *server) summarize(e entry) replay.ListEntry {
	now := e.version()
	if le, ok := s.summaries.get(e.file(), func(v fileVersion) bool { return v == now }); ok {
		return le
	}
	var le replay.ListEntry
	p, release, err := s.pages.get(e.file()+"\x00list", e.versionKey(), false, func(grow func(int64) error) (*replay.Page, error) {
		return s.build(e, true, grow)
	})
	switch {
	case err != nil:
		le = replay.ListEntry{Err: s.failure(e, err)}
	case len(p.Sessions) == 0:
		le = replay.ListEntry{Err: "no session in the file"}
	default:
		le = replay.Summary(p.Sessions[0])
	}
	if release != nil {
		release()
	}
	le.ID, le.Size, le.Client = e.ID, e.Size, e.Client
	le.Where = s.roots[e.root].path
	if !s.cfg.NoContent { // the project directory is the user's working directory
		le.Where += " · " + e.Project
	}
	if !le.HasActivity && le.Err == "" {
		le.Activity, le.HasActivity = e.ModTime.UnixMilli(), true
	}
	if !errors.Is(err, errPagesBusy) { // busy is a moment's, not the file's
		s.summaries.put(e.file(), now, le)
	}
	return le
}

// failure is what a request is told of a session that could not be
// built: why, without the server's paths (the console has them).
func (s *server) failure(e entry, err error) string {
	var be *budgetError
	if errors.As(err, &be) {
		return be.Error()
	}
	fmt.Fprintf(s.cfg.Log, "dshtrace serve: session %q (%s): %v\n", e.ID, path.Join(s.roots[e.root].path, e.Path), err)
	return unwrapPath(err).Error()
}

// list serves the session list: the latest activity first, filtered by
// session id, agent, turn end reason and finding.
func (s *server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	l := replay.List{Query: q.Get("q"), Agent: q.Get("agent"), Reason: q.Get("reason"), Finding: q.Get("finding")}
	for _, root := range s.roots {
		l.Roots = append(l.Roots, root.path)
	}
	all := s.listEntries(s.entries())
	agents, reasons, found := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range all {
		if e.Agent != "" {
			agents[e.Agent] = true
		}
		for _, rc := range e.Reasons {
			reasons[rc.Kind] = true
		}
		for _, fc := range e.Findings {
			found[fc.Name] = true
		}
		if l.Matches(e) {
			l.Sessions = append(l.Sessions, e)
		}
	}
	l.Total = len(all)
	l.Agents, l.Reasons, l.Findings = sortedKeys(agents), sortedKeys(reasons), sortedKeys(found)
	slices.SortStableFunc(l.Sessions, latestFirst)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := replay.RenderList(w, l); err != nil {
		fmt.Fprintf(s.cfg.Log, "dshtrace serve: the list: %v\n", err)
	}
}

// listEntries are the list entries of the sessions, two read at a time.
func (s *server) listEntries(entries []entry) []replay.ListEntry {
	all := make([]replay.ListEntry, len(entries))
	var wg sync.WaitGroup
	work := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range work {
				all[i] = s.summarize(entries[i])
				all[i].URL = s.url(entries, entries[i])
			}
		})
	}
	for i := range entries {
		work <- i
	}
	close(work)
	wg.Wait()
	return all
}

// latestFirst orders list entries by their latest activity, then id.
func latestFirst(a, b replay.ListEntry) int {
	switch {
	case a.Activity > b.Activity:
		return -1
	case a.Activity < b.Activity:
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// session serves one session's page: the page of its turns that holds
// ?find=ID (an element id) or ?turn=N, else ?page=N, else the first.
func (s *server) session(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	entries := s.entries()
	e, ok := s.lookup(entries, id, q.Get("client"), q.Get("root"))
	if !ok {
		whose := ""
		if c := q.Get("client"); c != "" {
			whose = fmt.Sprintf(" of client %q", c)
		}
		http.Error(w, fmt.Sprintf("no session %q%s under the served roots", id, whose), http.StatusNotFound)
		return
	}
	p, release, err := s.page(e)
	if err != nil {
		s.refuse(w, e, err)
		return
	}
	defer release()
	known := map[string]entry{} // the sessions of the page's client: its links stay within them
	for _, o := range entries {
		if o.Client == e.Client {
			known[o.ID] = o
		}
	}
	self := s.url(entries, e)
	opts := replay.RenderOptions{Jaeger: s.cfg.Jaeger, Home: "/", Client: e.Client, SessionURL: func(id string) string {
		if o, ok := known[id]; ok {
			return s.url(entries, o)
		}
		return ""
	}, Children: func(id string) []replay.Child { return s.children(entries, e.Client, id) }}
	if len(p.Sessions) > 0 {
		win, err := s.window(p.Sessions[0], self, q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		opts.Window = win
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := replay.Render(w, p, opts); err != nil {
		// Mostly a client gone; the page's start may be written already.
		fmt.Fprintf(s.cfg.Log, "dshtrace serve: session %q: %v\n", id, err)
	}
}

// refuse answers a session whose page could not be built: 503 when the
// memory for pages is short (with when to retry), else 500; the line says
// why, without the server's paths.
func (s *server) refuse(w http.ResponseWriter, e entry, err error) {
	msg := fmt.Sprintf("session %q: %s", e.ID, s.failure(e, err))
	switch {
	case errors.Is(err, errPagesBusy):
		w.Header().Set("Retry-After", "5")
		http.Error(w, msg, http.StatusServiceUnavailable)
	case errors.Is(err, errPageTooLarge):
		http.Error(w, msg, http.StatusServiceUnavailable)
	default:
		http.Error(w, msg, http.StatusInternalServerError)
	}
}

// window picks the page of a long session a request asks for: the page
// holding ?find=ID (an element id) or ?turn=N, else ?page=N, else the
// first. A parameter that names nothing in the session is an error.
func (s *server) window(sess *replay.Session, self string, q url.Values) (*replay.Window, error) {
	n := s.cfg.TurnsPerPage
	pages := sess.Pages(n)
	cur, err := pick(sess, n, len(pages), q)
	if err != nil || len(pages) < 2 {
		return nil, err
	}
	sep := "?"
	if strings.Contains(self, "?") {
		sep = "&"
	}
	w := &replay.Window{From: pages[cur][0], To: pages[cur][1], Find: self + sep + "find="}
	first := 0
	for i, pg := range pages {
		turns := 0
		for _, b := range sess.Blocks[pg[0]:pg[1]] {
			if b.Turn != nil {
				turns++
			}
		}
		label := strconv.Itoa(first+1) + "–" + strconv.Itoa(first+turns)
		first += turns
		link := replay.PageLink{Label: label}
		if i != cur {
			link.URL = self + sep + "page=" + strconv.Itoa(i+1)
		}
		w.Pages = append(w.Pages, link)
	}
	return w, nil
}

// pick is the index of the page a request's ?find, ?turn or ?page names
// (the first without any), or why it names none.
func pick(sess *replay.Session, n, pages int, q url.Values) (int, error) {
	switch {
	case q.Has("find"):
		i, ok := sess.FindPage(n, q.Get("find"))
		if !ok {
			return 0, fmt.Errorf("session %q has no element %q", sess.ID, q.Get("find"))
		}
		return i, nil
	case q.Has("turn"):
		i, ok := sess.FindPage(n, sess.Prefix+"turn-"+q.Get("turn"))
		if _, err := strconv.ParseUint(q.Get("turn"), 10, 63); err != nil || !ok {
			return 0, fmt.Errorf("session %q has no turn %q (%s)", sess.ID, q.Get("turn"), plural(len(sess.Turns), "turn"))
		}
		return i, nil
	case q.Has("page"):
		v, err := strconv.Atoi(q.Get("page"))
		if err != nil || v < 1 || v > pages {
			return 0, fmt.Errorf("session %q has no page %q (%s of up to %d turns)", sess.ID, q.Get("page"), plural(pages, "page"), n)
		}
		return v - 1, nil
	}
	return 0, nil
}

// parentLink is what a session's header says of the session that started
// it, as children needs it.
type parentLink struct {
	parent  string // "" when the header names none or is not a subagent's
	created int64
}

// maxIDBytes bounds a parent id kept: longer is no session id of dsh's.
const maxIDBytes = 1024

// parentOf is the parent a session file's header names, read once per
// file: appending rows does not change the header, so it is read again
// only when the file shrinks (a file written anew).
func (s *server) parentOf(e entry) parentLink {
	if l, ok := s.parents.get(e.file(), func(v fileVersion) bool { return e.Size >= v.size }); ok {
		return l
	}
	var l parentLink
	if f, err := sessionroot.OpenComplete(s.roots[e.root].dir, e.Path, e.Zstd); err == nil {
		if dec, err := sessionlog.NewDecoder(f, sessionlog.Options{}); err == nil {
			if row, err := dec.Next(); err == nil && row.Header != nil {
				h := row.Header
				if (h.Origin == "subagent" || h.DelegationDepth >= 1) && len(h.ParentSession) <= maxIDBytes {
					l = parentLink{parent: strings.Clone(h.ParentSession), created: h.CreatedAt}
				}
			}
			dec.Close()
		}
		f.Close()
	}
	s.parents.put(e.file(), e.version(), l)
	return l
}

// children are the subagent sessions under the roots that client's
// session id started: the same client wrote them, and their headers name
// it their parent (docs/format.md §3).
func (s *server) children(entries []entry, client, id string) []replay.Child {
	var out []replay.Child
	for _, e := range entries {
		if e.Client != client {
			continue
		}
		if l := s.parentOf(e); l.parent != "" && l.parent == id {
			out = append(out, replay.Child{ID: e.ID, Created: l.created})
		}
	}
	return out
}
