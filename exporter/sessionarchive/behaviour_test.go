package sessionarchive

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// synthetic is a small valid v0 session: a header (cwd omitted when
// empty) and turns turn/start…turn/end with no steps, seqs 0..2n-1.
func synthetic(id, cwd string, turns int) []string {
	h := map[string]any{"type": "session", "version": 0, "id": id, "createdAt": 1, "delegationDepth": 0}
	if cwd != "" {
		h["cwd"] = cwd
	}
	hb, _ := json.Marshal(h)
	lines := []string{string(hb)}
	for i := 0; i < turns; i++ {
		lines = append(lines,
			fmt.Sprintf(`{"type":"turn/start","seq":%d,"time":%d,"data":{"turn":%d}}`, 2*i, 10+2*i, i+1),
			fmt.Sprintf(`{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":%d,"reason":{"kind":"completed"}}}`, 2*i+1, 11+2*i, i+1))
	}
	return lines
}

// linesRecords turns rows of one session into the receiver's records.
func linesRecords(t testing.TB, session string, lines []string) []record {
	t.Helper()
	dec := sessionlog.NewRowDecoder(0, 0)
	tr := logrecord.NewTracker(turnmodel.DefaultBounds())
	var out []record
	for i, l := range lines {
		row, err := dec.Decode([]byte(l), i+1)
		require.NoError(t, err)
		id := session
		if row.SessionID != "" && row.Wrapper != sessionlog.WrapNone {
			id = row.SessionID
		}
		lrs := plog.NewLogRecordSlice()
		tr.Append(lrs, id, row, dec.Format(), observed)
		require.Equal(t, 1, lrs.Len(), "line %d makes no record", i+1)
		out = append(out, record{session: id, lr: lrs.At(0)})
	}
	return out
}

// A session id or cwd chosen to escape the root — path traversal, NUL,
// slashes either way, "." and ".." — names one directory inside the root,
// dsh's escape of it, and the escape reads back as the id.
func TestHostileSessionIDsStayInsideRoot(t *testing.T) {
	ids := []string{"../../x", "..", ".", "a\x00b", "a/b", "/etc/passwd", `..\..\x`, "~", "../", "x/../../y", "\u00e9\U0001F600"}
	cwds := []string{"", "../../escape", "/", "..", "/tmp/\x00/../..", `C:\..\..`}
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	cfg := testConfig(root)
	exp := newExporter(t, cfg)
	for i, id := range ids {
		cwd := cwds[i%len(cwds)]
		require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(linesRecords(t, id, synthetic(id, cwd, 1)))))
		// And a live stream of another session with a hostile id.
		live, _ := json.Marshal(id + "/live")
		wrapped := fmt.Sprintf(`{"method":"session.event","params":{"sessionId":%s,"event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}}`, live)
		require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(linesRecords(t, "", []string{wrapped}))))
	}
	require.NoError(t, exp.Shutdown(context.Background()))

	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing may be written beside the root")
	got := map[string]string{}
	for _, rel := range files(t, root) {
		parts := strings.Split(rel, string(filepath.Separator))
		require.Len(t, parts, 3, "%s is not project/session/file", rel)
		id, ok := unescape(parts[1])
		require.True(t, ok, rel)
		got[id] = parts[0]
		assert.NotContains(t, []string{".", ".."}, parts[1])
	}
	for i, id := range ids {
		require.Contains(t, got, id)
		assert.Equal(t, sessionroot.ProjectDir(cwds[i%len(cwds)]), got[id], "project of %q", id)
		require.Contains(t, got, id+"/live")
		assert.Equal(t, sessionroot.NoCwdDir, got[id+"/live"])
	}
}

// sumOf reads a counter's value for the given attributes.
func sumOf(t testing.TB, tt *componenttest.Telemetry, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	if err != nil {
		return 0
	}
	want := attribute.NewSet(attrs...)
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		if dp.Attributes.Equals(&want) {
			n += dp.Value
		}
	}
	return n
}

func gaugeOf(t testing.TB, tt *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	require.NoError(t, err)
	return m.Data.(metricdata.Gauge[int64]).DataPoints[0].Value
}

// Rows that arrive early are held until their seq is next; a missing seq
// is awaited pending_timeout, then given up on — the held rows written in
// order, the gap counted — and a row of the gap arriving later is skipped
// as a duplicate. Beyond max_pending_rows the give-up is immediate.
// Every step shows in the self-telemetry.
func TestEarlyRowsGiveUpAndTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()

	root := t.TempDir()
	cfg := testConfig(root)
	cfg.PendingTimeout = 50 * time.Millisecond
	cfg.MaxPendingRows = 3
	exp := newExporterWith(t, cfg, set)
	defer func() { require.NoError(t, exp.Shutdown(context.Background())) }()

	lines := synthetic("s1", "/home/alice/app", 6) // header + seqs 0..11
	recs := linesRecords(t, "s1", lines)
	send := func(rs ...record) { require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(rs))) }
	path := archivePath(t, root, "/home/alice/app", "s1", 0, false)
	content := func() string { b, _ := os.ReadFile(path); return string(b) }
	want := func(idx ...int) string {
		var b strings.Builder
		for _, i := range idx {
			b.WriteString(lines[i] + "\n")
		}
		return b.String()
	}

	// Seqs 0, 1, then 3: seq 3 waits for seq 2.
	send(recs[0], recs[1], recs[2], recs[4])
	assert.Equal(t, want(0, 1, 2), content())
	assert.EqualValues(t, 1, gaugeOf(t, tt, metadata.MetricRowsPending))
	// Re-delivered rows are duplicates, written or held.
	send(recs[1], recs[4])
	assert.EqualValues(t, 2, sumOf(t, tt, metadata.MetricDuplicatesSkipped))
	// The wait times out: seq 3 is written, seq 2 given up.
	require.Eventually(t, func() bool { return content() == want(0, 1, 2, 4) }, 5*time.Second, 10*time.Millisecond)
	assert.EqualValues(t, 1, sumOf(t, tt, metadata.MetricGiveUps, attribute.String("cause", "timeout")))
	assert.EqualValues(t, 1, sumOf(t, tt, metadata.MetricSeqsSkipped, attribute.String("cause", "timeout")))
	// Seq 2 arriving now is behind the file: skipped.
	send(recs[3])
	assert.EqualValues(t, 3, sumOf(t, tt, metadata.MetricDuplicatesSkipped))
	// Seqs 6..9 while 4 and 5 are missing: the fourth held row overflows
	// max_pending_rows (3), so the archive gives up at once.
	send(recs[7], recs[8], recs[9], recs[10])
	assert.Equal(t, want(0, 1, 2, 4, 7, 8, 9, 10), content())
	assert.EqualValues(t, 1, sumOf(t, tt, metadata.MetricGiveUps, attribute.String("cause", "overflow")))
	assert.EqualValues(t, 2, sumOf(t, tt, metadata.MetricSeqsSkipped, attribute.String("cause", "overflow")))
	send(recs[11], recs[12])
	assert.Equal(t, want(0, 1, 2, 4, 7, 8, 9, 10, 11, 12), content())

	assert.EqualValues(t, 10, sumOf(t, tt, metadata.MetricRowsWritten))
	assert.EqualValues(t, len(content()), sumOf(t, tt, metadata.MetricBytesWritten))
	assert.EqualValues(t, 1, sumOf(t, tt, metadata.MetricFilesCreated))
	assert.EqualValues(t, 1, gaugeOf(t, tt, metadata.MetricSessionsOpen))
	assert.EqualValues(t, 0, gaugeOf(t, tt, metadata.MetricRowsPending))

	// Records that are no session rows are counted, not archived.
	other := plog.NewLogs()
	other.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("hello")
	require.NoError(t, exp.ConsumeLogs(context.Background(), other))
	assert.EqualValues(t, 1, sumOf(t, tt, metadata.MetricRecordsDropped, attribute.String("reason", "not_session")))
}

// Rows held at shutdown are written (a give-up, cause shutdown) rather
// than lost: the queue considered them delivered.
func TestShutdownWritesHeldRows(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()
	root := t.TempDir()
	lines := synthetic("s2", "", 2)
	recs := linesRecords(t, "s2", lines)
	exp := newExporterWith(t, testConfig(root), set)
	require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf([]record{recs[0], recs[1], recs[3], recs[4]})))
	require.NoError(t, exp.Shutdown(context.Background()))
	b, err := os.ReadFile(archivePath(t, root, "", "s2", 0, false))
	require.NoError(t, err)
	assert.Equal(t, lines[0]+"\n"+lines[1]+"\n"+lines[3]+"\n"+lines[4]+"\n", string(b))
	assert.EqualValues(t, 1, sumOf(t, tt, metadata.MetricSeqsSkipped, attribute.String("cause", "shutdown")))
}

// A zstd archive has dsh's frame layout: the first frame is exactly the
// header row, every later frame one batch of complete rows.
func TestZstdFrameLayout(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	cfg.Compression = CompressionZstd
	lines := synthetic("z", "/w", 5)
	recs := linesRecords(t, "z", lines)
	deliver(t, cfg, recs, 4) // header + 3 rows, then 4, then 3
	b, err := os.ReadFile(archivePath(t, root, "/w", "z", 0, true))
	require.NoError(t, err)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	require.NoError(t, err)
	defer dec.Close()
	var frames []string
	for len(b) > 0 {
		var h zstd.Header
		require.NoError(t, h.Decode(b))
		n := frameLen(t, b)
		out, err := dec.DecodeAll(b[:n], nil)
		require.NoError(t, err)
		frames = append(frames, string(out))
		b = b[n:]
	}
	j := func(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
	assert.Equal(t, []string{j(lines[0]), j(lines[1:4]...), j(lines[4:8]...), j(lines[8:]...)}, frames)
}

// frameLen finds a frame's end by decoding growing prefixes: slow, and
// independent of the archive's own frame walker.
func frameLen(t testing.TB, b []byte) int {
	t.Helper()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	require.NoError(t, err)
	defer dec.Close()
	for n := 1; n <= len(b); n++ {
		if _, err := dec.DecodeAll(b[:n], nil); err == nil {
			return n
		}
	}
	t.Fatal("no complete frame")
	return 0
}

// The seed dialect posted as bare rows without a header (POST
// /v1/sessions/{id}/events) is archived headerless in _no-cwd, byte for
// byte.
func TestSeedDialectArchivedHeaderless(t *testing.T) {
	seed := []string{
		`{"type":"turn/start","seq":0,"time":1755000000000,"data":{"turn":1}}`,
		`{"type":"step/start","seq":1,"time":1755000000010,"data":{"turn":1,"step":1}}`,
		`{"type":"user/message","seq":2,"time":1755000000020,"data":{"role":"user","content":[{"type":"text","text":"Fix the typo in the runoob README."}]},"surfaceOp":"append","sourceEventSeqs":[0]}`,
		`{"type":"assistant/chunk","seq":3,"time":1755000000030,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","text":"I'll "}}}`,
		`{"type":"assistant/message","seq":4,"time":1755000000050,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"I'll search"},{"type":"tool_use","id":"call_1","name":"bash","input":{"command":"grep runoob README.md"}}]},"usage":{"inputTokens":12,"outputTokens":4}},"surfaceOp":"append","sourceEventSeqs":[3]}`,
		`{"type":"tool/call","seq":5,"time":1755000000060,"data":{"turn":1,"step":1,"callId":"call_1","name":"bash","arguments":"{\"command\":\"grep runoob README.md\"}"}}`,
		`{"type":"tool/result","seq":6,"time":1755000000070,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"bash","content":"runoob","isError":false}},"surfaceOp":"append","sourceEventSeqs":[5]}`,
		`{"type":"step/end","seq":7,"time":1755000000080,"data":{"turn":1,"step":1}}`,
		`{"type":"turn/end","seq":8,"time":1755000000090,"data":{"turn":1,"reason":"completed"}}`,
	}
	root := t.TempDir()
	deliver(t, testConfig(root), linesRecords(t, "seed-1", seed), 3)
	path := archivePath(t, root, "", "seed-1", 0, false)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, strings.Join(seed, "\n")+"\n", string(b))
	assert.Equal(t, []string{filepath.Join(sessionroot.NoCwdDir, "seed-1", "session.jsonl")}, files(t, root))
}

// dsh v4's own OTLP export (eventName session-log, the envelope in
// attribute content) is archived like a live stream; dsh v0's export,
// rebuilt from data with one chunk per step, is not archivable.
func TestDshExportRecords(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()
	root := t.TempDir()
	exp := newExporterWith(t, testConfig(root), set)
	e0 := `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	lr := lrs.AppendEmpty()
	lr.SetEventName("session-log")
	lr.Body().SetStr("session-log")
	lr.Attributes().PutStr("sessionId", "v4-export")
	lr.Attributes().PutStr("content", e0)
	v0 := lrs.AppendEmpty()
	v0.Body().SetEmptyMap().PutInt("turn", 1)
	v0.Attributes().PutStr("session.id", "v0-export")
	v0.Attributes().PutStr("event.type", "turn/start")
	v0.Attributes().PutInt("event.seq", 0)
	require.NoError(t, exp.ConsumeLogs(context.Background(), ld))
	require.NoError(t, exp.Shutdown(context.Background()))
	b, err := os.ReadFile(archivePath(t, root, "", "v4-export", 0, false))
	require.NoError(t, err)
	assert.Equal(t, e0+"\n", string(b))
	assert.Equal(t, []string{filepath.Join(sessionroot.NoCwdDir, "v4-export", "session.jsonl")}, files(t, root))
	assert.EqualValues(t, 1, sumOf(t, tt, metadata.MetricRecordsDropped, attribute.String("reason", "unsupported")))
}
