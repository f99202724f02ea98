package sessionevent

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

func readRepoTestdata(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", rel))
	require.NoError(t, err)
	return b
}

// switchConsumer fails with err while it is set, else stores in sink.
type switchConsumer struct {
	sink  consumertest.LogsSink
	err   atomic.Pointer[error]
	calls atomic.Int64
}

func (c *switchConsumer) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *switchConsumer) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	c.calls.Add(1)
	if e := c.err.Load(); e != nil && *e != nil {
		return *e
	}
	return c.sink.ConsumeLogs(ctx, ld)
}

func (c *switchConsumer) fail(err error) { c.err.Store(&err) }

// TestHTTPSessionEndpoint: a session file posted whole is accepted row for
// row, each record's Body the row; posted again it is all duplicates and
// nothing is emitted.
func TestHTTPSessionEndpoint(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	lines := nonBlankLines(file)

	res := post(t, sessionURL(s, "sess-1"), file, "Content-Type", "application/x-ndjson")
	require.Equal(t, http.StatusAccepted, res.status, res.body)
	assert.Equal(t, len(lines), res.int("accepted"))
	assert.Equal(t, 0, res.int("duplicates"))
	assert.Equal(t, lines, bodies(sink.AllLogs()))

	res = post(t, sessionURL(s, "sess-1"), file)
	require.Equal(t, http.StatusAccepted, res.status)
	assert.Equal(t, 0, res.int("accepted"))
	assert.Equal(t, len(lines), res.int("duplicates"))
	assert.Equal(t, len(lines), sink.LogRecordCount(), "duplicates were emitted")

	// Another session id is another session.
	res = post(t, sessionURL(s, "sess-2"), file)
	assert.Equal(t, len(lines), res.int("accepted"))
}

// TestHTTPRecordContract: the records are exactly docs/design.md §3: resource
// {session.id} only, event names, body, timestamps, attributes, ids,
// severity.
func TestHTTPRecordContract(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	rows := []string{
		`{"type":"session","version":4,"id":"hdr-id","createdAt":1788000000000,"isSeeded":false,"delegationDepth":0}`,
		`{"type":"turn/start","seq":0,"time":1788000000001,"data":{"turn":1}}`,
		`{"type":"step/start","seq":1,"time":1788000000002,"data":{"turn":1,"step":1}}`,
		`{"type":"assistant/message","seq":2,"time":1788000000003,"data":{"turn":1,"step":1,"message":{"id":"m1","role":"assistant","content":[{"type":"tool-call","id":"c1","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}},"surfaceOp":"append"}`,
		`{"type":"tool/call","seq":3,"time":1788000000004,"data":{"turn":1,"step":1,"callId":"c1","name":"bash","arguments":"{}"}}`,
		`{"type":"tool/result","seq":4,"time":1788000000005,"data":{"turn":1,"step":1,"message":{"id":"r1","role":"tool","toolCallId":"c1","content":[{"type":"text","text":"no"}],"isError":true,"source":{"kind":"tool"}}},"surfaceOp":"append"}`,
		`{"type":"step/end","seq":5,"time":1788000000006,"data":{"turn":1,"step":1}}`,
		`{"type":"turn/end","seq":6,"time":1788000000007,"data":{"turn":1,"reason":{"kind":"error","error":{"code":"X","message":"x"}}}}`,
	}
	res := post(t, sessionURL(s, "path-id"), []byte(strings.Join(rows, "\n")+"\n"))
	require.Equal(t, http.StatusAccepted, res.status, res.body)

	recs := records(sink.AllLogs())
	require.Len(t, recs, len(rows))
	for i, r := range recs {
		assert.Equal(t, rows[i], r.lr.Body().Str(), "row %d", i)
		// Resource: exactly session.id, from the path.
		assert.Equal(t, map[string]any{"session.id": "path-id"}, r.res.Resource().Attributes().AsRaw())
		assert.Equal(t, metadata.ScopeName, r.res.ScopeLogs().At(0).Scope().Name())
		sid, _ := r.lr.Attributes().Get("session.id")
		assert.Equal(t, "path-id", sid.Str())
		assert.NotZero(t, r.lr.ObservedTimestamp())
		fv, ok := r.lr.Attributes().Get("dsh.session.format_version")
		assert.True(t, ok && fv.Int() == 4, "row %d format version", i)
	}
	hdr := recs[0].lr
	assert.Equal(t, "dsh.session.header", hdr.EventName())
	assert.Equal(t, pcommon.Timestamp(1788000000000*1e6), hdr.Timestamp())

	ev := recs[5].lr // tool/result with isError
	assert.Equal(t, "dsh.session.event", ev.EventName())
	assert.Equal(t, pcommon.Timestamp(1788000000005*1e6), ev.Timestamp())
	assert.Equal(t, map[string]any{
		"session.id": "path-id", "event.type": "tool/result", "event.seq": int64(4), "dsh.turn": int64(1), "dsh.step": int64(1),
		"gen_ai.tool.call.id": "c1", "dsh.session.format_version": int64(4),
	}, ev.Attributes().AsRaw())
	assert.Equal(t, plog.SeverityNumberError, ev.SeverityNumber())
	assert.Equal(t, turnrender.TraceID("path-id", 1), ev.TraceID())
	assert.Equal(t, turnrender.ToolSpanID("path-id", 1, 1, "c1", ""), ev.SpanID())
	assert.Equal(t, turnrender.ChatSpanID("path-id", 1, 1, 1), recs[3].lr.SpanID())
	assert.Equal(t, plog.SeverityNumberError, recs[7].lr.SeverityNumber(), "turn/end error")
	assert.Equal(t, plog.SeverityNumberInfo, recs[1].lr.SeverityNumber())
	assert.Equal(t, turnrender.TurnSpanID("path-id", 1), recs[1].lr.SpanID())
}

// TestHTTPAnyOrderAndGaps: rows posted out of order, in batches that leave
// gaps, are all accepted once; re-posts across batches are duplicates; the
// records of one batch come out in seq order.
func TestHTTPAnyOrderAndGaps(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	lines := nonBlankLines(readRepoTestdata(t, "dialects/v4-tools.jsonl"))
	header, events := lines[0], lines[1:]
	url := sessionURL(s, "s")
	join := func(ls ...string) []byte { return []byte(strings.Join(ls, "\n")) } // no final newline: fine for a body

	// The tail first, reversed: not from the session start, so only row-level checks apply.
	tail := events[10:]
	rev := make([]string, len(tail))
	for i, l := range tail {
		rev[len(tail)-1-i] = l
	}
	res := post(t, url, join(rev...))
	require.Equal(t, http.StatusAccepted, res.status, res.body)
	assert.Equal(t, len(tail), res.int("accepted"))
	assert.Equal(t, tail, bodies(sink.AllLogs()), "one request's rows are emitted in seq order")

	// A middle slice leaving a gap (events 5..9 still missing).
	res = post(t, url, join(events[2:5]...))
	require.Equal(t, http.StatusAccepted, res.status, res.body)
	assert.Equal(t, 3, res.int("accepted"))

	// The whole file now: header and events 0,1,5..9 are new, the rest duplicates.
	res = post(t, url, join(lines...))
	require.Equal(t, http.StatusAccepted, res.status, res.body)
	assert.Equal(t, 1+2+5, res.int("accepted"))
	assert.Equal(t, len(tail)+3, res.int("duplicates"))
	assert.ElementsMatch(t, lines, bodies(sink.AllLogs()), "every row exactly once")
	_ = header
}

// TestHTTPAtomic: one bad row refuses the whole request — 400 naming line
// and seq — and nothing of it is emitted; fixed, the same rows go through.
func TestHTTPAtomic(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	lines := nonBlankLines(readRepoTestdata(t, "dialects/v4-tools.jsonl"))
	bad := append([]string(nil), lines...)
	bad[6] = strings.Replace(bad[6], `"data":{`, `"data":{"n":-0,`, 1) // -0 breaks lossless JSON
	res := post(t, sessionURL(s, "s"), []byte(strings.Join(bad, "\n")+"\n"))
	require.Equal(t, http.StatusBadRequest, res.status)
	assert.Equal(t, 7, res.int("line"))
	assert.Equal(t, 5, res.int("seq"))
	assert.Equal(t, "DATA_NOT_LOSSLESS", res.body["code"])
	assert.Contains(t, res.body["error"], "line 7")
	assert.Zero(t, sink.LogRecordCount())

	res = post(t, sessionURL(s, "s"), []byte(strings.Join(lines, "\n")+"\n"))
	require.Equal(t, http.StatusAccepted, res.status)
	assert.Equal(t, len(lines), res.int("accepted"))
}

// TestHTTPEncodings: gzip and zstd by Content-Encoding, and raw .jsonl.zstd
// and .gz bodies recognized by their magic bytes, all give the same rows.
func TestHTTPEncodings(t *testing.T) {
	file := readRepoTestdata(t, "dialects/v2-stream.jsonl")
	lines := nonBlankLines(file)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(file)
	require.NoError(t, zw.Close())
	z := zstdFile(t, file, 3)
	for _, tc := range []struct {
		name    string
		body    []byte
		headers []string
	}{
		{"plain", file, nil},
		{"gzip", gz.Bytes(), []string{"Content-Encoding", "gzip"}},
		{"zstd", z, []string{"Content-Encoding", "zstd"}},
		{"raw-zstd", z, []string{"Content-Type", "application/zstd"}},
		{"raw-zstd-no-type", z, nil},
		{"raw-gzip", gz.Bytes(), []string{"Content-Type", "application/octet-stream"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			s := start(t, httpOnlyConfig(), sink, nil)
			res := post(t, sessionURL(s, "s"), tc.body, tc.headers...)
			require.Equal(t, http.StatusAccepted, res.status, res.body)
			assert.Equal(t, lines, bodies(sink.AllLogs()))
		})
	}
}

// TestHTTPRefusals: the 4xx answers of docs/design.md §3, each emitting nothing.
func TestHTTPRefusals(t *testing.T) {
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	small := zstdFile(t, []byte(strings.Repeat(`{"type":"todo/write","seq":1,"time":1,"data":{"todos":[]}}`+"\n", 3)), 1)
	long := `{"type":"todo/write","seq":0,"time":1,"data":{"x":"` + strings.Repeat("a", 2000) + `"}}`
	cases := []struct {
		name    string
		path    string
		body    []byte
		headers []string
		status  int
		line    int
	}{
		{"content type", "/v1/sessions/s/events", file, []string{"Content-Type", "application/xml"}, http.StatusUnsupportedMediaType, 0},
		{"multipart", "/v1/sessions/s/events", file, []string{"Content-Type", "multipart/form-data; boundary=x"}, http.StatusUnsupportedMediaType, 0},
		{"line too long", "/v1/sessions/s/events", []byte(long + "\n"), nil, http.StatusRequestEntityTooLarge, 1},
		{"body too large", "/v1/sessions/s/events", bytes.Repeat([]byte("\n"), 5000), nil, http.StatusRequestEntityTooLarge, 0},
		{"raw zstd too large", "/v1/sessions/s/events", zstdFile(t, bytes.Repeat([]byte(" \n"), 4000), 4000), nil, http.StatusRequestEntityTooLarge, 0},
		{"torn zstd", "/v1/sessions/s/events", small[:len(small)-3], nil, http.StatusBadRequest, 0},
		{"bad gzip", "/v1/sessions/s/events", []byte("not gzip"), []string{"Content-Encoding", "gzip"}, http.StatusBadRequest, 0},
		{"unknown encoding", "/v1/sessions/s/events", file, []string{"Content-Encoding", "br"}, http.StatusBadRequest, 0},
		{"wrong session in wrapper", "/v1/sessions/other/events",
			[]byte(`{"sessionId":"s","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}` + "\n"), nil, http.StatusBadRequest, 1},
		{"bare row on lines endpoint", "/v1/session-events", file, nil, http.StatusBadRequest, 1},
		{"unsupported version", "/v1/sessions/s/events",
			[]byte(`{"type":"session","version":9,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}` + "\n"), nil, http.StatusBadRequest, 1},
		{"control char in session id", "/v1/sessions/a%01b/events", file, nil, http.StatusBadRequest, 0},
		{"empty body", "/v1/sessions/s/events", nil, nil, http.StatusBadRequest, 0},
		{"whitespace body", "/v1/sessions/s/events", []byte(" \n\r\n\t\n"), nil, http.StatusBadRequest, 0},
		{"empty body on lines endpoint", "/v1/session-events", []byte{}, nil, http.StatusBadRequest, 0},
		{"empty zstd body", "/v1/sessions/s/events", zstdFile(t, []byte("\n\n"), 2), nil, http.StatusBadRequest, 0},
		{"conflicting duplicate", "/v1/sessions/s/events", []byte(
			`{"type":"todo/write","seq":7,"time":1,"data":{"todos":[]}}` + "\n" +
				`{"type":"todo/write","seq":7,"time":2,"data":{"todos":[]}}` + "\n"), nil, http.StatusBadRequest, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			cfg := httpOnlyConfig()
			cfg.MaxLineBytes = 1024
			cfg.HTTP.Get().ServerConfig.MaxRequestBodySize = 4096
			s := start(t, cfg, sink, nil)
			res := post(t, s.url+tc.path, tc.body, tc.headers...)
			require.Equal(t, tc.status, res.status, "%v", res.body)
			assert.NotEmpty(t, res.body["error"])
			if strings.HasPrefix(tc.name, "empty") || strings.HasPrefix(tc.name, "whitespace") {
				assert.Contains(t, res.body["error"], "empty request body")
			}
			if tc.line > 0 {
				assert.Equal(t, tc.line, res.int("line"), "%v", res.body)
			}
			assert.Zero(t, sink.LogRecordCount())
		})
	}
	t.Run("method", func(t *testing.T) {
		s := start(t, httpOnlyConfig(), consumertest.NewNop(), nil)
		res, err := client.Get(s.url + "/v1/session-events")
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	})
}

// TestHTTPBackpressure: a retryable refusal of the pipeline is a 503 with
// Retry-After and nothing remembered, so the retry delivers; a permanent
// one is a 400.
func TestHTTPBackpressure(t *testing.T) {
	c := new(switchConsumer)
	s := start(t, httpOnlyConfig(), c, nil)
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	n := len(nonBlankLines(file))

	c.fail(errors.New("memory limiter: refusing"))
	res := post(t, sessionURL(s, "s"), file)
	require.Equal(t, http.StatusServiceUnavailable, res.status)
	assert.Equal(t, "1", res.header.Get("Retry-After"))

	c.fail(consumererror.NewPermanent(errors.New("bad data")))
	res = post(t, sessionURL(s, "s"), file)
	require.Equal(t, http.StatusBadRequest, res.status)
	assert.Contains(t, res.body["error"], "permanently")

	c.fail(nil)
	res = post(t, sessionURL(s, "s"), file)
	require.Equal(t, http.StatusAccepted, res.status)
	assert.Equal(t, n, res.int("accepted"))
	assert.Equal(t, n, c.sink.LogRecordCount())

	// The refused attempts left the records' ids untouched: the same as a
	// receiver that never saw them.
	fresh := new(consumertest.LogsSink)
	s2 := start(t, httpOnlyConfig(), fresh, nil)
	post(t, sessionURL(s2, "s"), file)
	got, want := records(c.sink.AllLogs()), records(fresh.AllLogs())
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].lr.SpanID(), got[i].lr.SpanID(), "record %d", i)
		assert.Equal(t, want[i].lr.TraceID(), got[i].lr.TraceID(), "record %d", i)
	}
}

// TestHTTPLinesEndpoint: SDK JSON-RPC notifications, stream-json lines and
// envelopes name their sessions; status and result lines are ignored.
func TestHTTPLinesEndpoint(t *testing.T) {
	for _, file := range []string{"wrap-jsonrpc.jsonl", "wrap-streamjson.jsonl", "wrap-envelope.jsonl"} {
		t.Run(file, func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			s := start(t, httpOnlyConfig(), sink, nil)
			body := readRepoTestdata(t, "dialects/"+file)
			res := post(t, s.url+"/v1/session-events", body, "Content-Type", "application/jsonl")
			require.Equal(t, http.StatusAccepted, res.status, res.body)
			recs := records(sink.AllLogs())
			require.Equal(t, res.int("accepted"), len(recs))
			require.NotZero(t, len(recs))
			for _, r := range recs {
				assert.Contains(t, r.lr.Body().Str(), `"`+r.session+`"`, "the wrapper names the resource's session")
				assert.Equal(t, 1, r.res.Resource().Attributes().Len())
			}
			res = post(t, s.url+"/v1/session-events", body)
			assert.Equal(t, 0, res.int("accepted"))
			assert.Equal(t, len(recs), res.int("duplicates"))
		})
	}
}

// TestHTTPDedupAcrossRestart: with a storage extension, rows accepted
// before a restart are duplicates after it.
func TestHTTPDedupAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	lines := nonBlankLines(file)
	storageID := storagetest.NewStorageID("fs")
	cfg := httpOnlyConfig()
	cfg.HTTP.Get().Storage = &storageID

	sink := new(consumertest.LogsSink)
	host := storagetest.NewStorageHost().WithFileBackedStorageExtension("fs", dir)
	s := start(t, cfg, sink, host)
	res := post(t, sessionURL(s, "s"), []byte(strings.Join(lines[:10], "\n")))
	require.Equal(t, 10, res.int("accepted"))
	s.stop()

	host = storagetest.NewStorageHost().WithFileBackedStorageExtension("fs", dir)
	s = start(t, cfg, sink, host)
	res = post(t, sessionURL(s, "s"), file)
	require.Equal(t, http.StatusAccepted, res.status)
	assert.Equal(t, len(lines)-10, res.int("accepted"))
	assert.Equal(t, 10, res.int("duplicates"))
	assert.Equal(t, lines, bodies(sink.AllLogs()), "every row once, across the restart")

	// The ids after the restart are those of an uninterrupted receiver.
	fresh := new(consumertest.LogsSink)
	s2 := start(t, httpOnlyConfig(), fresh, nil)
	post(t, sessionURL(s2, "s"), file)
	got, want := records(sink.AllLogs()), records(fresh.AllLogs())
	for i := range want {
		assert.Equal(t, want[i].lr.SpanID(), got[i].lr.SpanID(), "record %d", i)
	}
}

// TestHTTPConcurrentSameRows: concurrent requests carrying the same rows
// deliver each row once.
func TestHTTPConcurrentSameRows(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { post(t, sessionURL(s, "s"), file) })
	}
	wg.Wait()
	assert.Equal(t, nonBlankLines(file), bodies(sink.AllLogs()))
}

// rejectAuth is a server authenticator that lets only "Bearer good" in.
type rejectAuth struct {
	component.StartFunc
	component.ShutdownFunc
}

var _ extensionauth.Server = rejectAuth{}

func (rejectAuth) Authenticate(ctx context.Context, sources map[string][]string) (context.Context, error) {
	for _, v := range sources["Authorization"] {
		if v == "Bearer good" {
			return ctx, nil
		}
	}
	return ctx, errors.New("not authorized")
}

// TestHTTPAuth: an auth extension configured through confighttp rejects a
// request without valid credentials with 401, and lets a valid one in.
func TestHTTPAuth(t *testing.T) {
	authID := component.MustNewID("testauth")
	cfg := httpOnlyConfig()
	cfg.HTTP.Get().ServerConfig.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: authID}})
	host := storagetest.NewStorageHost().WithExtension(authID, rejectAuth{})
	sink := new(consumertest.LogsSink)
	s := start(t, cfg, sink, host)
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")

	res := post(t, sessionURL(s, "s"), file)
	assert.Equal(t, http.StatusUnauthorized, res.status)
	res = post(t, sessionURL(s, "s"), file, "Authorization", "Bearer bad")
	assert.Equal(t, http.StatusUnauthorized, res.status)
	assert.Zero(t, sink.LogRecordCount())
	res = post(t, sessionURL(s, "s"), file, "Authorization", "Bearer good")
	assert.Equal(t, http.StatusAccepted, res.status)
	assert.Equal(t, len(nonBlankLines(file)), sink.LogRecordCount())
}

// fullDisk is a storage extension whose writes fail while full is set, as
// a file_storage on a full disk does.
type fullDisk struct {
	*storagetest.TestStorage
	full *atomic.Bool
}

func (d fullDisk) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := d.TestStorage.GetClient(ctx, kind, id, name)
	return fullClient{Client: c, full: d.full}, err
}

type fullClient struct {
	storage.Client
	full *atomic.Bool
}

func (c fullClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		if op.Type != storage.Get && c.full.Load() {
			return syscall.ENOSPC
		}
	}
	return c.Client.Batch(ctx, ops...)
}

func (c fullClient) Set(ctx context.Context, k string, v []byte) error {
	if c.full.Load() {
		return syscall.ENOSPC
	}
	return c.Client.Set(ctx, k, v)
}

// An accepted row is a stored row: while the dedup state cannot be stored,
// a request is answered 503 with Retry-After — its rows delivered once,
// and remembered, so that retrying delivers nothing again — and it is
// acknowledged (as duplicates) once a retry stores the state.
func TestHTTPStateNotStoredIs503(t *testing.T) {
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	lines := nonBlankLines(file)
	full := &atomic.Bool{}
	id := storagetest.NewStorageID("fs")
	host := storagetest.NewStorageHost().WithExtension(id, fullDisk{storagetest.NewInMemoryStorageExtension("fs"), full})
	cfg := httpOnlyConfig()
	cfg.HTTP.Get().Storage = &id
	sink := new(consumertest.LogsSink)
	s := start(t, cfg, sink, host)

	full.Store(true)
	for range 2 {
		res := post(t, sessionURL(s, "s"), file)
		require.Equal(t, http.StatusServiceUnavailable, res.status)
		assert.NotEmpty(t, res.header.Get("Retry-After"))
		assert.Contains(t, res.body["error"], "cannot be made durable")
	}
	assert.Equal(t, lines, bodies(sink.AllLogs()), "delivered once, not again on the retry")

	full.Store(false)
	res := post(t, sessionURL(s, "s"), file)
	require.Equal(t, http.StatusAccepted, res.status)
	assert.Equal(t, 0, res.int("accepted"))
	assert.Equal(t, len(lines), res.int("duplicates"))
	assert.Equal(t, lines, bodies(sink.AllLogs()), "every row once")
}
