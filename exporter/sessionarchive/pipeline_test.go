package sessionarchive

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/connector/turnstate"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/receiver/sessionevent"
)

// freeEndpoint is a loopback address no one listens on just now.
func freeEndpoint(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

func startReceiver(t testing.TB, cfg *sessionevent.Config, next consumer.Logs) receiver.Logs {
	t.Helper()
	f := sessionevent.NewFactory()
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, next)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	return r
}

// post sends a corpus file to the receiver as a client would: a session
// file to its session's URL, a live stream to the self-describing one.
func post(t testing.TB, endpoint, path string) {
	t.Helper()
	body, err := os.ReadFile(path)
	require.NoError(t, err)
	u := "http://" + endpoint + "/v1/session-events"
	if h := headerOf(t, path); h != nil {
		u = "http://" + endpoint + "/v1/sessions/" + url.PathEscape(h.ID) + "/events"
	}
	resp, err := http.Post(u, "application/x-ndjson", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

// countingLogs forwards to next and counts the records.
func countingLogs(next consumer.Logs, n *atomic.Int64) consumer.Logs {
	c, _ := consumer.NewLogs(func(ctx context.Context, ld plog.Logs) error {
		n.Add(int64(ld.LogRecordCount()))
		return next.ConsumeLogs(ctx, ld)
	})
	return c
}

// normalized erases the dangling cause, which differs between a replay
// (end_of_input) and a pipeline (shutdown), and puts every span of a
// resource into one ResourceSpans.
func normalized(td ptrace.Traces) ptrace.Traces {
	out := ptrace.NewTraces()
	byResource := map[string]ptrace.SpanSlice{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		var keys []string
		for k, v := range rs.Resource().Attributes().All() {
			keys = append(keys, k+"="+v.AsString())
		}
		sort.Strings(keys)
		key := strings.Join(keys, ",")
		spans, ok := byResource[key]
		if !ok {
			nrs := out.ResourceSpans().AppendEmpty()
			rs.Resource().CopyTo(nrs.Resource())
			ss := nrs.ScopeSpans().AppendEmpty()
			rs.ScopeSpans().At(0).Scope().CopyTo(ss.Scope())
			spans = ss.Spans()
			byResource[key] = spans
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				sp := spans.AppendEmpty()
				ss.At(k).CopyTo(sp)
				if _, ok := sp.Attributes().Get("dsh.dangling.cause"); ok {
					sp.Attributes().PutStr("dsh.dangling.cause", "*")
					sp.Status().SetMessage("*")
				}
			}
		}
	}
	return out
}

// The whole product path, both ways. Corpus file → session_event (HTTP)
// → session_archive gives the archive the corpus file itself is; that
// archive → session_event (file tailer) → turn_state gives the same spans,
// with the same ids, as the corpus file replayed directly.
func TestPipelineThroughArchive(t *testing.T) {
	dir := testcorpus.Dir(t)
	for _, compression := range []string{CompressionNone, CompressionZstd} {
		for _, rel := range testcorpus.Files(t) {
			t.Run(compression+"/"+rel, func(t *testing.T) {
				path := filepath.Join(dir, rel)
				root := t.TempDir()
				cfg := testConfig(root)
				cfg.Compression = compression
				cfg.PendingTimeout = 100 * time.Millisecond // a late-joined stream waits this long
				exp := newExporter(t, cfg)

				endpoint := freeEndpoint(t)
				rcfg := sessionevent.NewFactory().CreateDefaultConfig().(*sessionevent.Config)
				rcfg.Files = configoptional.None[sessionevent.FileConfig]()
				rcfg.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = endpoint
				httpIn := startReceiver(t, rcfg, exp)
				post(t, endpoint, path)
				require.NoError(t, httpIn.Shutdown(context.Background()))
				require.NoError(t, exp.Shutdown(context.Background()))
				want := expect(t, path, compression == CompressionZstd)
				checkArchive(t, root, want)
				rows := 0
				for _, content := range want {
					rows += bytes.Count(content, []byte("\n"))
				}

				traces := new(consumertest.TracesSink)
				cf := turnstate.NewFactory()
				conn, err := cf.CreateLogsToTraces(context.Background(), connectortest.NewNopSettings(cf.Type()), cf.CreateDefaultConfig(),
					connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): traces}))
				require.NoError(t, err)
				require.NoError(t, conn.Start(context.Background(), componenttest.NewNopHost()))
				fcfg := sessionevent.NewFactory().CreateDefaultConfig().(*sessionevent.Config)
				fcfg.HTTP = configoptional.None[sessionevent.HTTPConfig]()
				fc := fcfg.Files.GetOrInsertDefault()
				fc.Include = []string{filepath.Join(root, "**", "session*.jsonl*")}
				fc.PollInterval = 10 * time.Millisecond
				var read atomic.Int64
				filesIn := startReceiver(t, fcfg, countingLogs(conn, &read))
				require.Eventually(t, func() bool { return read.Load() >= int64(rows) }, 10*time.Second, 10*time.Millisecond,
					fmt.Sprintf("the tailer read %d of %d rows", read.Load(), rows))
				require.NoError(t, filesIn.Shutdown(context.Background()))
				require.NoError(t, conn.Shutdown(context.Background()))

				got := ptrace.NewTraces()
				for _, td := range traces.AllTraces() {
					td.ResourceSpans().MoveAndAppendTo(got.ResourceSpans())
				}
				require.NoError(t, ptracetest.CompareTraces(normalized(replay(t, path, fallbackSession)), normalized(got),
					ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
			})
		}
	}
}
