package sessionevent

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// TestHostileFiles posts every case of the foundation's hostile set
// (testdata/hostile at the repository root) whole: each breaks one rule of
// the format and gets a 4xx naming its line, and nothing of it is emitted.
// A request holding a session from its start is judged against every
// invariant, as dsh judges a file (a seq gap followed by a turn/end makes
// dsh reject the file as corrupt, dsh-format §1.5). The two "tolerated"
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
