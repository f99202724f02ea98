package sessionevent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

// httpOnlyConfig is a config with the HTTP source on a free loopback port.
func httpOnlyConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	h := cfg.HTTP.GetOrInsertDefault()
	h.ServerConfig.NetAddr.Endpoint = "127.0.0.1:0"
	return cfg
}

// filesOnlyConfig tails pattern with a fast poll.
func filesOnlyConfig(pattern string, storage *component.ID) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.HTTP = configoptional.None[HTTPConfig]()
	f := cfg.Files.GetOrInsertDefault()
	f.Include = []string{pattern}
	f.PollInterval = 10 * time.Millisecond
	f.Storage = storage
	return cfg
}

// started is a running receiver under test.
type started struct {
	r    *sessionReceiver
	url  string
	stop func()
}

// start creates and starts a receiver; stop (also registered as cleanup)
// shuts it down once.
func start(t *testing.T, cfg *Config, next consumer.Logs, host component.Host) *started {
	t.Helper()
	set := receivertest.NewNopSettings(metadata.Type)
	// A fixed id: storage clients are named after it, and restarts must
	// find their state.
	set.ID = component.NewID(metadata.Type)
	return startWith(t, cfg, next, host, set)
}

func startWith(t *testing.T, cfg *Config, next consumer.Logs, host component.Host, set receiver.Settings) *started {
	t.Helper()
	if host == nil {
		host = componenttest.NewNopHost()
	}
	rl, err := NewFactory().CreateLogs(context.Background(), set, cfg, next)
	require.NoError(t, err)
	r := rl.(*sessionReceiver)
	require.NoError(t, r.Start(context.Background(), host))
	s := &started{r: r}
	if r.http != nil && r.http.Addr() != nil {
		s.url = "http://" + r.http.Addr().String()
	}
	var once sync.Once
	s.stop = func() {
		once.Do(func() { require.NoError(t, r.Shutdown(context.Background())) })
	}
	t.Cleanup(s.stop)
	return s
}

// client is an HTTP client without keep-alive, so no connection outlives a
// test (goleak).
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// response is a decoded reply.
type response struct {
	status int
	header http.Header
	body   map[string]any
}

func (r response) int(key string) int {
	v, _ := r.body[key].(float64)
	return int(v)
}

// post sends body with the given headers ("Content-Type: …" pairs).
func post(t *testing.T, url string, body []byte, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{status: res.StatusCode, header: res.Header}
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &out.body) != nil {
		out.body = map[string]any{"raw": string(raw)} // not ours: the mux's 404, …
	}
	return out
}

func sessionURL(s *started, id string) string {
	return s.url + "/v1/sessions/" + id + "/events"
}

// bodies are the Body strings of every record, in delivery order.
func bodies(lds []plog.Logs) []string {
	var out []string
	for _, ld := range lds {
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			sls := rls.At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					out = append(out, lrs.At(k).Body().Str())
				}
			}
		}
	}
	return out
}

// records flattens deliveries into (resource, record) pairs.
type rec struct {
	session string
	lr      plog.LogRecord
	res     plog.ResourceLogs
}

func records(lds []plog.Logs) []rec {
	var out []rec
	for _, ld := range lds {
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			rl := rls.At(i)
			id, _ := rl.Resource().Attributes().Get("session.id")
			sls := rl.ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					out = append(out, rec{session: id.Str(), lr: lrs.At(k), res: rl})
				}
			}
		}
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// nonBlankLines are the lines of b that carry something.
func nonBlankLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// zstdFile compresses rows as dsh does: the first line alone in frame 1,
// then perFrame lines per frame.
func zstdFile(t testing.TB, plain []byte, perFrame int) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	defer enc.Close()
	lines := strings.SplitAfter(string(plain), "\n")
	var out []byte
	flush := func(ls []string) {
		if len(ls) == 0 || strings.Join(ls, "") == "" {
			return
		}
		out = enc.EncodeAll([]byte(strings.Join(ls, "")), out)
	}
	if len(lines) > 0 {
		flush(lines[:1])
	}
	for i := 1; i < len(lines); i += perFrame {
		flush(lines[i:min(i+perFrame, len(lines))])
	}
	return out
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func appendFile(t testing.TB, path string, b []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// waitRecords waits until the sink holds n records.
func waitRecords(t *testing.T, sink *consumertest.LogsSink, n int) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return sink.LogRecordCount() >= n }, 10*time.Second, 5*time.Millisecond) {
		require.FailNowf(t, "too few records", "want %d records, have %d", n, sink.LogRecordCount())
	}
}

// settle waits a few poll cycles and checks nothing more arrives.
func settle(t *testing.T, sink *consumertest.LogsSink, n int) {
	t.Helper()
	waitRecords(t, sink, n)
	time.Sleep(100 * time.Millisecond)
	require.Equal(t, n, sink.LogRecordCount(), "records beyond the expected %d", n)
}
