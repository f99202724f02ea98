package sessionevent

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// TestHostileFiles posts every case of the foundation's hostile set
// (testdata/hostile at the repository root) whole: each breaks one rule of
// the format and gets a 4xx naming its line, and nothing of it is emitted.
// A request holding a session from its start is judged against every
// invariant, as dsh judges a file (a seq gap followed by a turn/end makes
// dsh reject the file as corrupt, docs/format.md §2.5). The two "tolerated"
// files are the exception by design: unknown members of open unions pass.
func TestHostileFiles(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "hostile")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		name := e.Name()
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(dir, name))
			require.NoError(t, err)
			sink := new(consumertest.LogsSink)
			s := start(t, httpOnlyConfig(), sink, nil)
			res := post(t, sessionURL(s, "hostile"), body)
			if strings.HasPrefix(name, "tolerated-") {
				require.Equal(t, http.StatusAccepted, res.status, "%v", res.body)
				assert.Equal(t, len(nonBlankLines(body)), sink.LogRecordCount())
				return
			}
			require.GreaterOrEqual(t, res.status, 400, "%v", res.body)
			require.Less(t, res.status, 500, "%v", res.body)
			assert.NotEmpty(t, res.body["error"])
			assert.Positive(t, res.int("line"), "%v", res.body)
			assert.Contains(t, res.body, "seq")
			assert.Zero(t, sink.LogRecordCount(), "a refused request emitted records")
			t.Logf("%d %v", res.status, res.body)
		})
	}
}

// TestHostileRequests: requests built to hurt — each a clear 4xx, nothing
// emitted, and the receiver still serves the next request.
func TestHostileRequests(t *testing.T) {
	deep := `{"type":"todo/write","seq":0,"time":1,"data":{"x":` + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + `}}`
	for _, tc := range []struct {
		name, path, body string
		status           int
	}{
		{"deep nesting", "/v1/sessions/s/events", deep + "\n", http.StatusBadRequest},
		{"invalid utf-8", "/v1/sessions/s/events", `{"type":"todo/write","seq":0,"time":1,"data":{"x":"` + "\xff\xfe" + `"}}` + "\n", http.StatusBadRequest},
		{"not an object", "/v1/sessions/s/events", "[1,2,3]\n", http.StatusBadRequest},
		{"nul bytes", "/v1/sessions/s/events", "\x00\x00\x00\n", http.StatusBadRequest},
		{"wrapper without session", "/v1/session-events", `{"method":"session.event","params":{"event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}}` + "\n", http.StatusBadRequest},
		{"bare header on lines endpoint", "/v1/session-events", `{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n", http.StatusBadRequest},
		{"second header", "/v1/sessions/s/events", `{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n" +
			`{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n", http.StatusBadRequest},
		{"huge range citation", "/v1/sessions/s/events", `{"type":"user/message","seq":9007199254740990,"time":1,"data":{"id":"u","role":"user","content":[],"source":{"kind":"user"}},"surfaceOp":"append","sourceEventSeqs":[[0,9007199254740989]]}` + "\n", http.StatusBadRequest},
		{"over-long session id", "/v1/sessions/" + strings.Repeat("x", 2000) + "/events", "{}\n", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			s := start(t, httpOnlyConfig(), sink, nil)
			res := post(t, s.url+tc.path, []byte(tc.body))
			assert.Equal(t, tc.status, res.status, "%v", res.body)
			assert.Zero(t, sink.LogRecordCount())
			ok := post(t, sessionURL(s, "after"), []byte(`{"type":"approval/policy","seq":0,"time":1,"data":{"policy":"never"}}`))
			assert.Equal(t, http.StatusAccepted, ok.status)
		})
	}
	// Path tricks: the id is data, never a path; dots and escaped slashes
	// are a session like any other.
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	for _, id := range []string{"..", "a%2F..%2Fb", "%2E%2E"} {
		res := post(t, sessionURL(s, id), []byte(`{"type":"approval/policy","seq":0,"time":1,"data":{"policy":"never"}}`))
		assert.Contains(t, []int{http.StatusAccepted, http.StatusNotFound, http.StatusMovedPermanently}, res.status, id)
	}
}

// hostileRow is a valid one-row request; bystanders post it under their own
// session ids while, or right after, a hostile request is refused.
const hostileRow = `{"type":"approval/policy","seq":0,"time":1,"data":{"policy":"never"}}` + "\n"

// hostileConfig is the receiver of the hostile HTTP cases: small limits
// (64 KiB bodies, 4 KiB rows) and short read timeouts, so each case is
// quick.
func hostileConfig() *Config {
	cfg := httpOnlyConfig()
	cfg.MaxLineBytes = 4 << 10
	sc := &cfg.HTTP.Get().ServerConfig
	sc.MaxRequestBodySize = 64 << 10
	sc.ReadHeaderTimeout = 500 * time.Millisecond
	sc.ReadTimeout = time.Second
	return cfg
}

// noRedirects is the test client without following redirects: the first
// answer counts.
var noRedirects = &http.Client{
	Transport:     client.Transport,
	Timeout:       client.Timeout,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// send is post with any method and client; a nil body sends none.
func send(t *testing.T, c *http.Client, method, url string, body []byte, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{status: res.StatusCode, header: res.Header}
	if json.Unmarshal(raw, &out.body) != nil {
		out.body = map[string]any{"raw": string(raw)}
	}
	return out
}

// bystander posts hostileRow for session id and wants it accepted.
func bystander(t *testing.T, s *started, id string) {
	t.Helper()
	res := post(t, sessionURL(s, id), []byte(hostileRow), "Content-Type", "application/x-ndjson")
	assert.Equal(t, http.StatusAccepted, res.status, "bystander %s: %v", id, res.body)
	assert.Equal(t, 1, res.int("accepted"), "bystander %s: %v", id, res.body)
}

// onlyBystanders checks that the sink holds exactly the bystanders' rows:
// nothing of the hostile request reached the pipeline.
func onlyBystanders(t *testing.T, sink *consumertest.LogsSink, ids ...string) {
	t.Helper()
	var got []string
	for _, r := range records(sink.AllLogs()) {
		got = append(got, r.session)
	}
	assert.ElementsMatch(t, ids, got, "records emitted")
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// TestHostileHTTP: requests built to hurt that a client can make with any
// HTTP library — rows and bodies over their limits, broken and bombed
// compression, other content types, methods and paths, session ids with
// control characters. Each is a clear 4xx — a JSON {"error":…} when the
// receiver (or confighttp, through our error handler) answers, the
// ServeMux's plain-text 404/405 for paths and methods that are not ours —
// nothing of it is emitted, and a request for another session sent at the
// same time, and one sent after, are accepted.
func TestHostileHTTP(t *testing.T) {
	var rows strings.Builder
	for i := range 2000 { // ~120 KiB of valid rows: over the 64 KiB body limit
		fmt.Fprintf(&rows, `{"type":"todo/write","seq":%d,"time":1,"data":{"todos":[]}}`+"\n", i+10)
	}
	big := []byte(rows.String())
	var wrapped strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&wrapped, `{"sessionId":"hostile","event":{"type":"todo/write","seq":%d,"time":1,"data":{"todos":[]}}}`+"\n", i+10)
	}
	long := `{"type":"todo/write","seq":2,"time":1,"data":{"x":"` + strings.Repeat("a", 5000) + `"}}` + "\n"
	// Two valid rows from the middle of a session (judged row by row).
	twoRows := `{"type":"todo/write","seq":10,"time":1,"data":{"todos":[]}}` + "\n" +
		`{"type":"todo/write","seq":11,"time":1,"data":{"todos":[]}}` + "\n"
	valid := gzipped(t, []byte(twoRows))
	corrupt := bytes.Clone(valid)
	for i := 12; i < len(corrupt)-8; i++ { // the deflate stream, past the 10-byte header
		corrupt[i] ^= 0x5a
	}
	badCRC := bytes.Clone(valid)
	badCRC[len(badCRC)-8] ^= 0xff // the CRC-32 of the trailer
	// A bomb: one valid row, then 32 MiB of blank lines — about 32 KiB on
	// the wire (under the 64 KiB limit), 500 times that decompressed.
	bombPlain := append([]byte(hostileRow), bytes.Repeat([]byte("\n"), 32<<20)...)
	bomb := gzipped(t, bombPlain)
	require.Less(t, len(bomb), 64<<10)
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	require.NoError(t, err)
	zbomb := zenc.EncodeAll(bombPlain, nil)
	require.NoError(t, zenc.Close())
	require.Less(t, len(zbomb), 64<<10)

	const (
		events = "/v1/sessions/hostile/events"
		ndjson = "application/x-ndjson"
	)
	for _, tc := range []struct {
		name, method, path string
		body               []byte
		headers            []string
		status             int
		// json: the answer is ours, {"error":…}; line: it names that line.
		json bool
		line int
		// follow: follow redirects (the first answer counts otherwise).
		follow bool
	}{
		// Sizes (ours: readError).
		{name: "row over max_line_bytes", path: events, body: []byte(twoRows + long), status: http.StatusRequestEntityTooLarge, json: true, line: 3},
		{name: "row over max_line_bytes, no newline", path: events, body: []byte(strings.TrimSuffix(long, "\n")), status: http.StatusRequestEntityTooLarge, json: true, line: 1},
		{name: "body over max_request_body_size", path: events, body: big, status: http.StatusRequestEntityTooLarge, json: true},
		{name: "body over max_request_body_size, lines endpoint", path: "/v1/session-events", body: []byte(wrapped.String()), status: http.StatusRequestEntityTooLarge, json: true},
		// Encodings: confighttp decodes Content-Encoding; a bad gzip header
		// is its 400 (in our JSON shape), a bad stream and every size
		// limit past it are ours.
		{name: "gzip: not gzip", path: events, body: []byte(twoRows), headers: []string{"Content-Encoding", "gzip"}, status: http.StatusBadRequest, json: true},
		{name: "gzip: corrupt stream", path: events, body: corrupt, headers: []string{"Content-Encoding", "gzip"}, status: http.StatusBadRequest, json: true},
		{name: "gzip: bad checksum", path: events, body: badCRC, headers: []string{"Content-Encoding", "gzip"}, status: http.StatusBadRequest, json: true},
		{name: "gzip: truncated", path: events, body: valid[:len(valid)/2], headers: []string{"Content-Encoding", "gzip"}, status: http.StatusBadRequest, json: true},
		{name: "gzip: corrupt, no Content-Encoding", path: events, body: corrupt, status: http.StatusBadRequest, json: true},
		{name: "gzip bomb", path: events, body: bomb, headers: []string{"Content-Encoding", "gzip"}, status: http.StatusRequestEntityTooLarge, json: true},
		{name: "gzip bomb, no Content-Encoding", path: events, body: bomb, headers: []string{"Content-Type", "application/gzip"}, status: http.StatusRequestEntityTooLarge, json: true},
		{name: "zstd bomb", path: events, body: zbomb, headers: []string{"Content-Encoding", "zstd"}, status: http.StatusRequestEntityTooLarge, json: true},
		{name: "zstd bomb, no Content-Encoding", path: events, body: zbomb, status: http.StatusRequestEntityTooLarge, json: true},
		// An unknown Content-Encoding is confighttp's 400 (as in every
		// collector HTTP receiver), answered through our error handler.
		{name: "unknown Content-Encoding", path: events, body: []byte(twoRows), headers: []string{"Content-Encoding", "br"}, status: http.StatusBadRequest, json: true},
		{name: "stacked Content-Encoding", path: events, body: valid, headers: []string{"Content-Encoding", "gzip, gzip"}, status: http.StatusBadRequest, json: true},
		// Content types (ours).
		{name: "application/xml", path: events, body: []byte(twoRows), headers: []string{"Content-Type", "application/xml"}, status: http.StatusUnsupportedMediaType, json: true},
		{name: "multipart/form-data", path: events, body: []byte(twoRows), headers: []string{"Content-Type", "multipart/form-data; boundary=x"}, status: http.StatusUnsupportedMediaType, json: true},
		{name: "text/html", path: "/v1/session-events", body: []byte(twoRows), headers: []string{"Content-Type", "text/html"}, status: http.StatusUnsupportedMediaType, json: true},
		{name: "malformed Content-Type", path: events, body: []byte(twoRows), headers: []string{"Content-Type", "application/;;"}, status: http.StatusUnsupportedMediaType, json: true},
		// Methods and paths: the ServeMux answers, in plain text.
		{name: "GET events", method: http.MethodGet, path: events, status: http.StatusMethodNotAllowed},
		{name: "PUT events", method: http.MethodPut, path: events, body: []byte(twoRows), status: http.StatusMethodNotAllowed},
		{name: "DELETE lines", method: http.MethodDelete, path: "/v1/session-events", status: http.StatusMethodNotAllowed},
		{name: "unknown path", path: "/v1/logs", body: []byte(twoRows), status: http.StatusNotFound},
		// An empty session id: the mux redirects the unclean path (307,
		// method and body kept) to /v1/sessions/events, which is a 404.
		{name: "empty session id", path: "/v1/sessions//events", body: []byte(twoRows), status: http.StatusTemporaryRedirect},
		{name: "empty session id, redirect followed", path: "/v1/sessions//events", body: []byte(twoRows), follow: true, status: http.StatusNotFound},
		{name: "events subpath", path: events + "/x", body: []byte(twoRows), status: http.StatusNotFound},
		{name: "root", path: "/", body: []byte(twoRows), status: http.StatusNotFound},
		// Session ids with control characters, percent-encoded (ours).
		{name: "session id with NUL", path: "/v1/sessions/a%00b/events", body: []byte(twoRows), status: http.StatusBadRequest, json: true},
		{name: "session id with newline", path: "/v1/sessions/a%0Ab/events", body: []byte(twoRows), status: http.StatusBadRequest, json: true},
		{name: "session id with CR LF", path: "/v1/sessions/a%0D%0AX-Injected:%201/events", body: []byte(twoRows), status: http.StatusBadRequest, json: true},
		{name: "session id with ESC", path: "/v1/sessions/%1B%5B31m/events", body: []byte(twoRows), status: http.StatusBadRequest, json: true},
		{name: "session id with DEL", path: "/v1/sessions/a%7F/events", body: []byte(twoRows), status: http.StatusBadRequest, json: true},
		{name: "session id invalid UTF-8", path: "/v1/sessions/a%FF%FE/events", body: []byte(twoRows), status: http.StatusBadRequest, json: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			s := start(t, hostileConfig(), sink, nil)
			method := cmp.Or(tc.method, http.MethodPost)
			headers := tc.headers
			if method == http.MethodPost && !slices.Contains(headers, "Content-Type") {
				headers = append([]string{"Content-Type", ndjson}, headers...)
			}
			var wg sync.WaitGroup
			wg.Go(func() { bystander(t, s, "during") })
			c := noRedirects
			if tc.follow {
				c = client
			}
			res := send(t, c, method, s.url+tc.path, tc.body, headers...)
			wg.Wait()
			bystander(t, s, "after")
			t.Logf("%d %v", res.status, res.body)

			assert.Equal(t, tc.status, res.status, "%v", res.body)
			if tc.json {
				assert.Equal(t, "application/json", res.header.Get("Content-Type"))
				assert.NotEmpty(t, res.body["error"], "%v", res.body)
				assert.NotContains(t, res.body, "raw", "not a JSON answer")
			}
			if tc.line > 0 {
				assert.Equal(t, float64(tc.line), res.body["line"], "%v", res.body)
				assert.Contains(t, res.body["error"], fmt.Sprintf("line %d", tc.line))
			}
			if tc.status == http.StatusMethodNotAllowed {
				assert.Equal(t, http.MethodPost, res.header.Get("Allow"))
			}
			onlyBystanders(t, sink, "during", "after")
		})
	}

	// What is accepted must stay accepted: every Content-Type and encoding
	// the README lists.
	for _, h := range [][]string{
		nil,
		{"Content-Type", "application/x-ndjson"},
		{"Content-Type", "application/x-ndjson; charset=utf-8"},
		{"Content-Type", "application/ndjson"},
		{"Content-Type", "application/jsonl"},
		{"Content-Type", "application/json"},
		{"Content-Type", "text/plain; charset=utf-8"},
		{"Content-Type", "application/x-www-form-urlencoded"},
		{"Content-Type", "application/octet-stream"},
		{"Content-Encoding", "gzip"},
	} {
		t.Run(fmt.Sprintf("accepted %v", h), func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			s := start(t, hostileConfig(), sink, nil)
			body := []byte(twoRows)
			if slices.Contains(h, "gzip") {
				body = valid
			}
			res := send(t, client, http.MethodPost, sessionURL(s, "ok"), body, h...)
			require.Equal(t, http.StatusAccepted, res.status, "%v", res.body)
			assert.Equal(t, 2, res.int("accepted"))
			assert.Equal(t, 2, sink.LogRecordCount())
		})
	}
}

// answer reads the server's reply on a raw connection: the status of a
// response, or 0 when the server closed the connection without one.
func answer(t *testing.T, c net.Conn, within time.Duration) (int, string) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(within)))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "no answer and still open after %v", within)
		return 0, err.Error() // EOF or reset: closed without a response
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestHostileConnections: clients that misbehave below HTTP — oversized
// headers, headers or a body trickled slower than the read timeouts. The Go
// HTTP server refuses these before (headers) or while (body) our handler
// runs; the connection ends within bounded time, nothing is emitted, and
// other sessions' requests are served meanwhile.
func TestHostileConnections(t *testing.T) {
	reqLine := "POST /v1/sessions/hostile/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-ndjson\r\n"
	run := func(t *testing.T, misbehave func(c net.Conn)) (status int, body string, took time.Duration) {
		sink := new(consumertest.LogsSink)
		s := start(t, hostileConfig(), sink, nil)
		c, err := net.Dial("tcp", s.r.http.Addr().String())
		require.NoError(t, err)
		t0 := time.Now()
		var wg sync.WaitGroup
		wg.Go(func() { misbehave(c) })
		wg.Go(func() { bystander(t, s, "during") })
		status, body = answer(t, c, 5*time.Second)
		took = time.Since(t0)
		_ = c.Close() // ends the misbehaving writer at its next write
		wg.Wait()
		bystander(t, s, "after")
		onlyBystanders(t, sink, "during", "after")
		t.Logf("answer %d %q after %v", status, body, took.Round(time.Millisecond))
		return status, body, took
	}

	// Request headers beyond net/http's DefaultMaxHeaderBytes (1 MiB;
	// confighttp's ServerConfig has no setting for it): the Go server
	// answers 431 itself, before any handler, and closes.
	t.Run("oversized header", func(t *testing.T) {
		status, _, _ := run(t, func(c net.Conn) {
			_, _ = io.WriteString(c, reqLine+"X-Big: "+strings.Repeat("a", http.DefaultMaxHeaderBytes+8<<10)+"\r\n\r\n")
		})
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, status)
	})
	t.Run("many headers", func(t *testing.T) {
		status, _, _ := run(t, func(c net.Conn) {
			var b strings.Builder
			b.WriteString(reqLine)
			for i := 0; b.Len() < http.DefaultMaxHeaderBytes+8<<10; i++ {
				fmt.Fprintf(&b, "X-H-%d: %s\r\n", i, strings.Repeat("v", 50))
			}
			_, _ = io.WriteString(c, b.String()+"\r\n")
		})
		assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, status)
	})

	// Slowloris: headers that never end, a line every 100 ms. The Go
	// server drops the connection at read_header_timeout (500 ms here),
	// without a response (a read timeout on a request not yet read).
	t.Run("slowloris headers", func(t *testing.T) {
		status, _, took := run(t, func(c net.Conn) {
			if _, err := io.WriteString(c, reqLine); err != nil {
				return
			}
			for i := 0; i < 50; i++ {
				time.Sleep(100 * time.Millisecond)
				if _, err := fmt.Fprintf(c, "X-Slow-%d: 1\r\n", i); err != nil {
					return
				}
			}
		})
		assert.Zero(t, status, "the server should close without a response")
		assert.GreaterOrEqual(t, took, 400*time.Millisecond, "closed before read_header_timeout")
		assert.Less(t, took, 3*time.Second)
	})

	// A slow body: complete headers and a valid first row, then a byte
	// every 100 ms. read_timeout (1 s) cuts the body off inside our
	// handler, which answers 408 and emits nothing; the request is atomic.
	t.Run("slow body", func(t *testing.T) {
		status, body, took := run(t, func(c net.Conn) {
			if _, err := fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n%s", reqLine, len(hostileRow)+100, hostileRow); err != nil {
				return
			}
			for i := 0; i < 100; i++ {
				time.Sleep(100 * time.Millisecond)
				if _, err := io.WriteString(c, "\n"); err != nil {
					return
				}
			}
		})
		assert.Equal(t, http.StatusRequestTimeout, status, body)
		assert.Contains(t, body, `{"error":"the request body did not arrive within the server's read_timeout`)
		assert.GreaterOrEqual(t, took, 900*time.Millisecond, "cut before read_timeout")
		assert.Less(t, took, 3*time.Second)
	})
	// A body that never comes: the same cut.
	t.Run("stalled body", func(t *testing.T) {
		status, body, took := run(t, func(c net.Conn) {
			_, _ = fmt.Fprintf(c, "%sContent-Length: 1000\r\n\r\n", reqLine)
		})
		assert.Equal(t, http.StatusRequestTimeout, status, body)
		assert.Contains(t, body, `{"error":"the request body did not arrive within the server's read_timeout`)
		assert.Less(t, took, 3*time.Second)
	})
	// A chunked body trickled one chunk at a time.
	t.Run("slow chunked body", func(t *testing.T) {
		status, body, took := run(t, func(c net.Conn) {
			if _, err := fmt.Fprintf(c, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", reqLine, len(hostileRow), hostileRow); err != nil {
				return
			}
			for i := 0; i < 100; i++ {
				time.Sleep(100 * time.Millisecond)
				if _, err := io.WriteString(c, "1\r\n\n\r\n"); err != nil {
					return
				}
			}
		})
		assert.Equal(t, http.StatusRequestTimeout, status, body)
		assert.Contains(t, body, `{"error":"the request body did not arrive within the server's read_timeout`)
		assert.Less(t, took, 3*time.Second)
	})
}
