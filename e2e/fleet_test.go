//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// liveGen writes one synthetic dsh v0 session turn by turn: each turn has
// two steps, the first with one or two tool calls (alternating), the
// second a plain answer.
type liveGen struct {
	id   string
	seq  int
	ms   int64
	turn int
	// ends are turn/end reasons (JSON) by turn number; the others complete.
	ends map[int]string
}

func newLiveGen(id string, t0 time.Time) *liveGen { return &liveGen{id: id, ms: t0.UnixMilli()} }

func (g *liveGen) header() []byte {
	return []byte(fmt.Sprintf(`{"type":"session","version":0,"id":%q,"createdAt":%d,"cwd":"/e2e","delegationDepth":0}`+"\n", g.id, g.ms))
}

// row renders one event; data is the JSON of its data member, extra any
// members after it.
func (g *liveGen) row(typ, data, extra string) []byte {
	g.ms += 7
	b := fmt.Sprintf(`{"type":%q,"seq":%d,"time":%d,"data":%s%s}`+"\n", typ, g.seq, g.ms, data, extra)
	g.seq++
	return []byte(b)
}

// nextTurn returns the rows of the next turn.
func (g *liveGen) nextTurn() [][]byte {
	g.turn++
	n := g.turn
	calls := 1 + n%2
	var out [][]byte
	add := func(typ, data, extra string) { out = append(out, g.row(typ, data, extra)) }
	add("turn/start", fmt.Sprintf(`{"turn":%d}`, n), "")
	add("step/start", fmt.Sprintf(`{"turn":%d,"step":1}`, n), "")
	add("user/message", fmt.Sprintf(`{"content":[{"type":"text","text":"soak question %d"}],"source":{"kind":"user"},"role":"user","id":"u-%d"}`, n, n), `,"surfaceOp":"append"`)
	var content []string
	for c := 1; c <= calls; c++ {
		content = append(content, fmt.Sprintf(`{"type":"tool-call","id":"call-%d-%d","name":"bash","arguments":"{\"command\": \"echo %d\"}"}`, n, c, c))
	}
	model := `"source":{"kind":"model","provider":"deepseek-official","model":"deepseek-v4-flash"}`
	add("assistant/message", fmt.Sprintf(`{"turn":%d,"step":1,"message":{"role":"assistant","content":[%s],%s,"id":"a-%d-1"},"usage":{"inputTokens":100,"outputTokens":20,"cacheReadTokens":50}}`,
		n, strings.Join(content, ","), model, n), `,"surfaceOp":"append"`)
	for c := 1; c <= calls; c++ {
		add("tool/call", fmt.Sprintf(`{"turn":%d,"step":1,"callId":"call-%d-%d","name":"bash","arguments":"{\"command\": \"echo %d\"}"}`, n, n, c, c), "")
	}
	for c := 1; c <= calls; c++ {
		add("tool/result", fmt.Sprintf(`{"turn":%d,"step":1,"message":{"source":{"kind":"tool","callId":"call-%d-%d"},"content":[{"type":"tool-result","toolCallId":"call-%d-%d","content":[{"type":"text","text":"%d\n"}],"isError":false}],"role":"user","id":"r-%d-%d"}}`,
			n, n, c, n, c, c, n, c), `,"surfaceOp":"append"`)
	}
	add("step/end", fmt.Sprintf(`{"turn":%d,"step":1}`, n), "")
	add("step/start", fmt.Sprintf(`{"turn":%d,"step":2}`, n), "")
	add("assistant/message", fmt.Sprintf(`{"turn":%d,"step":2,"message":{"role":"assistant","content":[{"type":"text","text":"done %d"}],%s,"id":"a-%d-2"},"usage":{"inputTokens":30,"outputTokens":5,"cacheReadTokens":120}}`,
		n, n, model, n), `,"surfaceOp":"append"`)
	add("step/end", fmt.Sprintf(`{"turn":%d,"step":2}`, n), "")
	reason := `{"kind":"completed"}`
	if r, ok := g.ends[n]; ok {
		reason = r
	}
	add("turn/end", fmt.Sprintf(`{"turn":%d,"reason":%s}`, n, reason), "")
	return out
}

// liveSession is one agent of the run: it writes (or posts) a few rows
// every ~150 ms until told to stop, then finishes its turn.
type liveSession struct {
	id   string
	http string // the collector's HTTP ingest base URL (posted), or "" (a tailed file)
	path string // the session file (files)
	gen  *liveGen
	rng  *rand.Rand
	// written: every row written to the file or accepted (202) over HTTP.
	written [][]byte
	// HTTP client statistics: requests, requests sent again, rows
	// acknowledged as duplicates, 503 answers (with their Retry-After).
	posts, retries, dupRows, refused int
	err                              error
}

// live runs the session until stop is closed and its open turn is complete.
func (s *liveSession) live(stop <-chan struct{}) {
	pending := [][]byte{s.gen.header()}
	for {
		if len(pending) == 0 {
			select {
			case <-stop:
				return
			default:
			}
			pending = s.gen.nextTurn()
		}
		n := min(len(pending), 1+s.rng.IntN(3))
		chunk := pending[:n]
		if s.http != "" {
			if err := s.post(chunk); err != nil {
				s.err = err
				return
			}
		} else if err := appendRows(s.path, chunk); err != nil {
			s.err = err
			return
		}
		s.written = append(s.written, chunk...)
		pending = pending[n:]
		time.Sleep(75*time.Millisecond + time.Duration(s.rng.IntN(150))*time.Millisecond)
	}
}

var soakClient = &http.Client{Timeout: 5 * time.Second}

// post sends rows as a real client would: on a connection error, a timeout
// or a 5xx it sends the same rows again (HTTP dedup makes that safe) until
// they are accepted, after the Retry-After a 503 names (at most 5 s).
func (s *liveSession) post(rows [][]byte) error {
	body := bytes.Join(rows, nil)
	deadline := time.Now().Add(postDeadline)
	for {
		s.posts++
		wait := 100 * time.Millisecond
		req, _ := http.NewRequest(http.MethodPost, s.http+"/v1/sessions/"+s.id+"/events", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := soakClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusAccepted:
				var acc, dup int
				_, _ = fmt.Sscanf(strings.TrimSpace(string(b)), `{"accepted":%d,"duplicates":%d}`, &acc, &dup)
				s.dupRows += dup
				return nil
			case resp.StatusCode < 500:
				return fmt.Errorf("session %s: HTTP %d %s", s.id, resp.StatusCode, bytes.TrimSpace(b))
			case resp.StatusCode == http.StatusServiceUnavailable:
				s.refused++
				if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
					wait = min(time.Duration(secs)*time.Second, 5*time.Second)
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("session %s: not accepted within %v (last: %v)", s.id, postDeadline, err)
		}
		s.retries++
		time.Sleep(wait)
	}
}

// postDeadline bounds how long an agent keeps resending one request.
const postDeadline = 3 * time.Minute

func appendRows(path string, rows [][]byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(bytes.Join(rows, nil)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// envInt reads a positive integer from the environment.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// fleet is a set of live agents: some write their session files into a
// tailed dsh root, the others post over HTTP, all at once, each with its
// own seeded randomness.
type fleet struct {
	agents []*liveSession
	nFiles int
	stop   chan struct{}
	wg     sync.WaitGroup
}

// newFleet prepares nFiles agents writing under root (project --e2e--) and
// nHTTP posting to httpBase, their ids made from tag, their randomness from
// seed. Session i starts i minutes after an hour ago.
func newFleet(t *testing.T, seed uint64, tag string, root string, nFiles int, httpBase string, nHTTP int) *fleet {
	t.Helper()
	f := &fleet{nFiles: nFiles, stop: make(chan struct{})}
	t0 := time.Now().Add(-time.Hour)
	for i := range nFiles + nHTTP {
		s := &liveSession{rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		if i < nFiles {
			s.id = fmt.Sprintf("%s-f11e-4000-8000-%012d", tag, i)
			s.path = filepath.Join(root, "--e2e--", s.id, "session.jsonl")
			if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
				t.Fatal(err)
			}
		} else {
			s.id = fmt.Sprintf("%s-face-4000-8000-%012d", tag, i)
			s.http = httpBase
		}
		s.gen = newLiveGen(s.id, t0.Add(time.Duration(i)*time.Minute))
		f.agents = append(f.agents, s)
	}
	return f
}

// start sets every agent writing.
func (f *fleet) start() {
	for _, s := range f.agents {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			s.live(f.stop)
		}()
	}
}

// finish tells the agents to stop, waits until each has completed its
// open turn, and fails the test if one could not write.
func (f *fleet) finish(t *testing.T) {
	t.Helper()
	close(f.stop)
	f.wg.Wait()
	for _, s := range f.agents {
		if s.err != nil {
			fatalf(t, "agent: %v", s.err)
		}
	}
}

// written is what the fleet wrote: each session's rows (as one body, to
// compute the turns from), every row's sink key ("session/seq",
// "session/header"), and the HTTP clients' statistics.
type written struct {
	sessions               []session
	rows                   map[string]bool
	nRows                  int
	posts, retries, dupAck int
	refused                int
}

func (f *fleet) written() written {
	w := written{rows: map[string]bool{}}
	for _, s := range f.agents {
		w.sessions = append(w.sessions, session{via: viaPost, id: s.id, body: bytes.Join(s.written, nil), file: s.id})
		w.rows[s.id+"/header"] = true
		for seq := 0; seq < s.gen.seq; seq++ {
			w.rows[s.id+"/"+strconv.Itoa(seq)] = true
		}
		w.nRows += len(s.written)
		w.posts += s.posts
		w.retries += s.retries
		w.dupAck += s.dupRows
		w.refused += s.refused
	}
	return w
}
