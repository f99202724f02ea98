//go:build unix

package sessionevent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

// The child collector's environment.
const (
	childEnv     = "SESSIONEVENT_SIGKILL_CHILD"
	childRoot    = "SESSIONEVENT_ROOT"
	childStorage = "SESSIONEVENT_STORAGE"
	childOut     = "SESSIONEVENT_OUT"
	// childBlockAt: the delivery (1-based) that never returns.
	childBlockAt = 3
)

var fileStorageID = component.MustNewID("file_storage")

// newFileStorage starts a real file_storage extension (bbolt) on dir.
func newFileStorage(ctx context.Context, dir string) (extension.Extension, error) {
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	ext, err := f.Create(ctx, extension.Settings{ID: fileStorageID, TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}, cfg)
	if err != nil {
		return nil, err
	}
	return ext, ext.Start(ctx, componenttest.NewNopHost())
}

// fileConsumer appends each delivered record's Body to a file and syncs
// it before returning — what downstream durably got. Its delivery number
// childBlockAt never returns (and marks the file first).
type fileConsumer struct {
	mu   sync.Mutex
	path string
	n    int
}

func (c *fileConsumer) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *fileConsumer) ConsumeLogs(_ context.Context, ld plog.Logs) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.n == childBlockAt {
		_ = os.WriteFile(c.path+".blocked", nil, 0o644)
		select {} // in flight when the process is killed
	}
	f, err := os.OpenFile(c.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(bodies([]plog.Logs{ld}), "\n") + "\n"); err != nil {
		return err
	}
	return f.Sync()
}

// runChild runs the receiver over the root in the environment with a real
// file_storage, until it is killed.
func runChild() int {
	ctx := context.Background()
	ext, err := newFileStorage(ctx, os.Getenv(childStorage))
	if err != nil {
		return 2
	}
	host := storagetest.NewStorageHost().WithExtension(fileStorageID, ext)
	cfg := filesOnlyConfig(pattern(os.Getenv(childRoot)), &fileStorageID)
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	r, err := NewFactory().CreateLogs(ctx, set, cfg, &fileConsumer{path: os.Getenv(childOut)})
	if err != nil {
		return 2
	}
	if err := r.Start(ctx, host); err != nil {
		return 2
	}
	select {}
}

func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	return nonBlankLines(b)
}

// TestFilesSIGKILL kills (SIGKILL) a collector process tailing a session
// file with a real file_storage extension, while a delivery is in flight,
// and starts another: every row reaches downstream exactly once — what the
// killed process delivered plus what the new one delivers is the file.
func TestFilesSIGKILL(t *testing.T) {
	for _, z := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "zstd"}[z]
		t.Run(name, func(t *testing.T) {
			root, storageDir, out := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "delivered")
			path := sessionPath(root, "k", "session.v4.jsonl")
			parts := [][]string{v4Rows("k", 0, 5), v4Rows("k", 5, 9), v4Rows("k", 9, 14)}
			add := func(rows []string) {
				if z {
					appendFile(t, path+".zstd", zstdFile(t, lines(rows), 2))
				} else {
					appendFile(t, path, lines(rows))
				}
			}
			add(parts[0])

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=1", childRoot+"="+root, childStorage+"="+storageDir, childOut+"="+out)
			require.NoError(t, cmd.Start())
			killed := false
			defer func() {
				if !killed {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			}()
			want := 0
			for i, part := range parts[:2] {
				want += len(part)
				require.Eventually(t, func() bool { return len(readLines(out)) == want }, 20*time.Second, 10*time.Millisecond, "part %d", i)
				add(parts[i+1])
			}
			require.Eventually(t, func() bool { _, err := os.Stat(out + ".blocked"); return err == nil }, 20*time.Second, 10*time.Millisecond)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			killed = true

			ext, err := newFileStorage(context.Background(), storageDir)
			require.NoError(t, err)
			defer func() { require.NoError(t, ext.Shutdown(context.Background())) }()
			sink := new(consumertest.LogsSink)
			s := start(t, filesOnlyConfig(pattern(root), &fileStorageID), sink, storagetest.NewStorageHost().WithExtension(fileStorageID, ext))
			settle(t, sink, len(parts[2]))
			s.stop()

			var all []string
			for _, p := range parts {
				all = append(all, p...)
			}
			assert.Equal(t, all, append(readLines(out), bodies(sink.AllLogs())...))
		})
	}
}
