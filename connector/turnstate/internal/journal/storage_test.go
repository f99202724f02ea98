package journal

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

var storageID = component.MustNewID("file_storage")

// fileStorage starts a real file_storage extension (bbolt) on dir.
func fileStorage(t *testing.T, dir string) storage.Extension {
	t.Helper()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	ext, err := f.Create(context.Background(), extension.Settings{ID: storageID,
		TelemetrySettings: componenttest.NewNopTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext.(storage.Extension)
}

// openOn opens a Storage journal on ext, reporting to tt.
func openOn(t *testing.T, ext storage.Extension, tt *componenttest.Telemetry) *Storage {
	t.Helper()
	client, err := ext.GetClient(context.Background(), component.KindConnector, component.NewID(metadata.Type), "turns")
	require.NoError(t, err)
	tel, err := metadata.NewTelemetry(tt.NewTelemetrySettings(), metadata.Gauges{
		TurnsOpen: zero, SessionsOpen: zero, JournalLag: zero, TurnsHeld: zero,
		View: func() (int64, int64, int64, bool) { return 0, 0, 0, false },
	})
	require.NoError(t, err)
	return NewStorage(client, Options{Logger: zap.NewNop(), Telemetry: tel})
}

func zero() int64 { return 0 }

// marks is an engine's marks, for Update.
type marks map[string]turnengine.Mark

func (m marks) of(id string) (turnengine.Mark, bool) {
	mk, ok := m[id]
	return mk, ok
}

// write runs one pass's write: Update, Start, Finish.
func write(t *testing.T, j *Storage, m marks, ids []string, forgotten ...string) error {
	t.Helper()
	ops := j.Update(m.of, ids, nil, forgotten)
	return j.Finish(context.Background(), j.Start(context.Background(), ops))
}

// The journal protocol on a storage extension: what a pass writes is read
// back whole by the next start, a forgotten session is deleted, and a
// write that failed leaves its sessions behind until a later write lands
// them, though their marks did not change since.
func TestStorageJournalProtocol(t *testing.T) {
	dir := t.TempDir()
	ext := fileStorage(t, dir)
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()

	j := openOn(t, ext, tt)
	rs, err := j.Load(context.Background())
	require.NoError(t, err)
	require.Empty(t, rs)
	m := marks{
		"a": {Started: true, Next: 5, Retain: 3, Open: 1},
		"b": {Started: true, Next: 9, Retain: 9, LastClosedTurn: 2},
		"c": {Started: true, Next: 2, Retain: 2},
	}
	require.NoError(t, write(t, j, m, []string{"a", "b", "c"}))
	delete(m, "c")
	require.NoError(t, write(t, j, m, nil, "c"))
	require.NoError(t, j.Close(context.Background()))

	again := openOn(t, ext, tt)
	rs, err = again.Load(context.Background())
	require.NoError(t, err)
	got := map[string]turnengine.Mark{}
	for _, r := range rs {
		got[r.ID] = r.Mark
	}
	assert.Equal(t, map[string]turnengine.Mark(m), got, "the marks written, the forgotten session gone")
	assert.Equal(t, []string{"a", "b"}, again.Sessions())

	// A write onto a closed client fails: its session is behind.
	require.NoError(t, again.Close(context.Background()))
	m["a"] = turnengine.Mark{Started: true, Next: 7, Retain: 3, Open: 1}
	err = write(t, again, m, []string{"a"})
	require.ErrorIs(t, err, ErrWrite)
	assert.EqualValues(t, 1, again.Lag.Load(), "one session behind")

	// The next pass that touches nothing writes it whole.
	third := openOn(t, ext, tt)
	third.adopt(Restored{ID: "a", Mark: m["a"]}, &entry{Mark: m["a"]}, false)
	third.markBehind([]string{"a"})
	ops := third.Update(m.of, nil, nil, nil)
	var rewritten bool
	for _, op := range ops {
		rewritten = rewritten || (op.Key == SessionKey("a") && op.Type == storage.Set)
	}
	require.True(t, rewritten, "a session behind is rewritten though its mark is unchanged")
	require.NoError(t, third.Finish(context.Background(), third.Start(context.Background(), ops)))
	assert.Zero(t, third.Lag.Load())
	require.NoError(t, third.Close(context.Background()))
}

// A value that cannot be read is said, counted and deleted: its session
// starts afresh, the others are restored, and the next start does not
// meet it again.
func TestStorageJournalDamaged(t *testing.T) {
	ext := fileStorage(t, t.TempDir())
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	j := openOn(t, ext, tt)
	m := marks{"good": {Started: true, Next: 4, Retain: 2, Open: 1}, "bad": {Started: true, Next: 4, Retain: 2, Open: 1}}
	require.NoError(t, write(t, j, m, []string{"bad", "good"}))
	require.NoError(t, j.store.(clientStore).Set(context.Background(), SessionKey("bad"), []byte("{not json")))
	require.NoError(t, j.Close(context.Background()))

	for start := range 2 { // the second start meets nothing damaged
		j := openOn(t, ext, tt)
		rs, err := j.Load(context.Background())
		require.NoError(t, err)
		require.Len(t, rs, 1, "start %d", start)
		assert.Equal(t, "good", rs[0].ID)
		assert.EqualValues(t, 1, damagedCount(t, tt), "start %d: one damaged value counted in all", start)
		require.NoError(t, j.Close(context.Background()))
	}
}

// damagedCount is the journal_damaged counter's value.
func damagedCount(t *testing.T, tt *componenttest.Telemetry) int64 {
	t.Helper()
	m, err := tt.GetMetric(metadata.MetricJournalDamaged)
	require.NoError(t, err)
	var n int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		n += dp.Value
	}
	return n
}
