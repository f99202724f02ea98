package sessionevent

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

func TestComponentFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "session_event", f.Type().String())
	assert.Equal(t, metadata.LogsStability, f.LogsStability())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))
}

// TestComponentLifecycle is the lifecycle test mdatagen would generate:
// shutdown without start, then start and shutdown twice with the same cfg.
func TestComponentLifecycle(t *testing.T) {
	cfg := httpOnlyConfig()
	f := cfg.Files.GetOrInsertDefault()
	f.Include = []string{filepath.Join(t.TempDir(), "**", "session*.jsonl*")}
	factory := NewFactory()
	set := receivertest.NewNopSettings(metadata.Type)

	t.Run("shutdown", func(t *testing.T) {
		r, err := factory.CreateLogs(context.Background(), set, cfg, consumertest.NewNop())
		require.NoError(t, err)
		require.NoError(t, r.Shutdown(context.Background()))
	})
	t.Run("lifecycle", func(t *testing.T) {
		for range 2 {
			r, err := factory.CreateLogs(context.Background(), set, cfg, consumertest.NewNop())
			require.NoError(t, err)
			require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
			require.NoError(t, r.Shutdown(context.Background()))
		}
	})
}

// TestComponentStorageErrors: a storage id naming no extension, or one that
// is no storage, fails Start clearly.
func TestComponentStorageErrors(t *testing.T) {
	missing := component.MustNewID("nothing")
	cfg := filesOnlyConfig(filepath.Join(t.TempDir(), "*"), &missing)
	r, err := NewFactory().CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	assert.ErrorContains(t, r.Start(context.Background(), componenttest.NewNopHost()), "not found")
	require.NoError(t, r.Shutdown(context.Background()))
}
