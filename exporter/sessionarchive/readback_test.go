package sessionarchive

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/receiver/sessionevent"
)

// The session_event receiver, tailing the archive as a dsh session root,
// reads back every archived row, in order, under the archived session's
// id — plain and zstd alike.
func TestReceiverReadsArchiveBack(t *testing.T) {
	dir := testcorpus.Dir(t)
	for _, compression := range []string{CompressionNone, CompressionZstd} {
		for _, rel := range testcorpus.Files(t) {
			t.Run(compression+"/"+rel, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(dir, rel)
				root := t.TempDir()
				cfg := testConfig(root)
				cfg.Compression = compression
				cfg.Fsync = FsyncNone
				deliver(t, cfg, corpusRecords(t, path, fallbackSession), 64)
				want := expect(t, path, compression == CompressionZstd)
				require.Len(t, want, 1)
				var archived []byte
				var session string
				for rel, content := range want {
					archived = content
					var ok bool
					session, ok = unescape(filepath.Base(filepath.Dir(rel)))
					require.True(t, ok)
				}
				lines := bytes.SplitAfter(archived, []byte("\n"))
				lines = lines[:len(lines)-1]

				f := sessionevent.NewFactory()
				rcfg := f.CreateDefaultConfig().(*sessionevent.Config)
				rcfg.HTTP = configoptional.None[sessionevent.HTTPConfig]()
				fc := rcfg.Files.GetOrInsertDefault()
				fc.Include = []string{filepath.Join(root, "**", "session*.jsonl*")}
				fc.PollInterval = 10 * time.Millisecond
				sink := new(consumertest.LogsSink)
				r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), rcfg, sink)
				require.NoError(t, err)
				require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
				defer func() { require.NoError(t, r.Shutdown(context.Background())) }()
				require.Eventually(t, func() bool { return sink.LogRecordCount() >= len(lines) }, 10*time.Second, 10*time.Millisecond,
					"the receiver read %d of %d rows", sink.LogRecordCount(), len(lines))

				var got []string
				for _, ld := range sink.AllLogs() {
					for i := 0; i < ld.ResourceLogs().Len(); i++ {
						rl := ld.ResourceLogs().At(i)
						id, _ := rl.Resource().Attributes().Get(logrecord.AttrSessionID)
						assert.Equal(t, session, id.Str())
						lrs := rl.ScopeLogs().At(0).LogRecords()
						for j := 0; j < lrs.Len(); j++ {
							got = append(got, lrs.At(j).Body().Str()+"\n")
						}
					}
				}
				want2 := make([]string, len(lines))
				for i, l := range lines {
					want2[i] = string(l)
				}
				assert.Equal(t, want2, got)
			})
		}
	}
}
