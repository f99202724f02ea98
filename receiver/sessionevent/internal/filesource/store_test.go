package filesource

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

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

func (c fullClient) Set(ctx context.Context, k string, v []byte) error {
	if c.full.Load() {
		return syscall.ENOSPC
	}
	return c.Client.Set(ctx, k, v)
}

// While checkpoints cannot be stored, a file is not read on: the batch
// delivered before the failure is delivered once, nothing after it until
// its checkpoint is stored; then the file carries on where it was, with
// nothing delivered twice. The episode is one error line and one info
// line, every failed write counted.
func TestCheckpointWriteFailurePausesTheFile(t *testing.T) {
	root := t.TempDir()
	path := sessionPath(root, "long", "session.v4.jsonl")
	writeFile(t, path, lines([]string{header, todoRow(0, 10), todoRow(1, 10)}))

	full := &atomic.Bool{}
	id := storagetest.NewStorageID("state")
	host := storagetest.NewStorageHost().WithExtension(id, fullDisk{storagetest.NewInMemoryStorageExtension("state"), full})
	core, logs := observer.New(zap.InfoLevel)
	sink := new(consumertest.LogsSink)
	cfg := NewDefaultConfig()
	cfg.Include = []string{filepath.Join(root, "**", "session*.jsonl*")}
	cfg.PollInterval = pollInterval
	cfg.Storage = &id
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: metadata.TransportFile, LongLivedCtx: true, ReceiverCreateSettings: set,
	})
	require.NoError(t, err)
	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	mt, err := metadata.NewTelemetry(tel.NewTelemetrySettings())
	require.NoError(t, err)
	s := New(cfg, 1<<20, turnmodel.DefaultBounds(), set, sink, obs, mt.ForTransport(metadata.TransportFile))
	require.NoError(t, s.Start(context.Background(), host))
	defer func() { require.NoError(t, s.Shutdown(context.Background())) }()
	settle(t, sink, 3)

	full.Store(true)
	appendFile(t, path, lines([]string{todoRow(2, 10)}))
	settle(t, sink, 4) // delivered; its checkpoint cannot be stored
	appendFile(t, path, lines([]string{todoRow(3, 10), todoRow(4, 10)}))
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, 4, sink.LogRecordCount(), "the file is not read on while its checkpoint cannot be stored")

	full.Store(false)
	settle(t, sink, 6)
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, 6, sink.LogRecordCount(), "nothing delivered twice")
	assert.Equal(t, []string{header, todoRow(0, 10), todoRow(1, 10), todoRow(2, 10), todoRow(3, 10), todoRow(4, 10)}, bodies(sink.AllLogs()))

	var errs, infos int
	for _, e := range logs.All() {
		switch {
		case e.Level == zap.ErrorLevel && strings.HasPrefix(e.Message, "Cannot store read checkpoints"):
			errs++
		case e.Message == "Read checkpoints are stored again; the files are read on":
			infos++
		}
	}
	assert.Equal(t, 1, errs, "one error line for the episode")
	assert.Equal(t, 1, infos)
	m, err := tel.GetMetric(metadata.MetricStateFailures)
	require.NoError(t, err)
	assert.NotEmpty(t, m.Data)
}
