package filesource

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/glob"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// BenchmarkRead reads every session file of a corpus whole, one after the
// other, with no poller around it, into a consumer that drops the records:
// the file path from bytes to the next consumer (decoding, records,
// batches, checkpoints in memory). The corpus is BENCH_CORPUS (a bench/gen
// output), else the repository's testdata dialects.
func BenchmarkRead(b *testing.B) {
	root := os.Getenv("BENCH_CORPUS")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "testdata", "dialects")
	}
	files := glob.Files([]string{filepath.Join(root, "**", "*.jsonl*")})
	require.NotEmpty(b, files)
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(b, err)
		size += fi.Size()
	}
	set := receivertest.NewNopSettings(metadata.Type)
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: metadata.TransportFile, LongLivedCtx: true, ReceiverCreateSettings: set,
	})
	require.NoError(b, err)
	tel, err := metadata.NewTelemetry(componenttest.NewNopTelemetrySettings())
	require.NoError(b, err)
	t := New(NewDefaultConfig(), 4<<20, turnmodel.DefaultBounds(), set, consumertest.NewNop(), obs, tel.ForTransport(metadata.TransportFile))
	t.checkpoints = checkpoint.NewStore(storage.NewNopClient(), false)
	t.zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	require.NoError(b, err)
	defer t.zd.Close()
	ctx := context.Background()
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, path := range files {
			t.read(ctx, &tailedFile{path: path, zstd: strings.HasSuffix(path, ".zstd"), garbageAt: -1})
		}
	}
}
