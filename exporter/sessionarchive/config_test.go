package sessionarchive

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg, confmap.Validate(cfg)
}

func TestConfigDefaults(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, FsyncBatch, cfg.Fsync)
	assert.Equal(t, CompressionNone, cfg.Compression)
	assert.Equal(t, 4096, cfg.MaxPendingRows)
	assert.Equal(t, 30*time.Second, cfg.PendingTimeout)
	assert.Equal(t, 10000, cfg.MaxSessions)
	assert.Equal(t, 256, cfg.MaxOpenFiles)
	assert.Equal(t, 5*time.Second, cfg.Timeout)
	require.True(t, cfg.QueueConfig.HasValue())
	assert.Equal(t, 1, cfg.QueueConfig.Get().NumConsumers)
	assert.True(t, cfg.RetryConfig.Enabled)
	// root has no default: where the archive goes is the user's choice.
	assert.ErrorContains(t, confmap.Validate(cfg), "root must be set")
}

func TestConfigLoad(t *testing.T) {
	cfg, err := loadConfig(t, "custom")
	require.NoError(t, err)
	assert.Equal(t, "/var/lib/dsh-archive", cfg.Root)
	assert.Equal(t, FsyncAlways, cfg.Fsync)
	assert.Equal(t, CompressionZstd, cfg.Compression)
	assert.Equal(t, 100, cfg.MaxPendingRows)
	assert.Equal(t, 2*time.Minute, cfg.PendingTimeout)
	assert.Equal(t, 500, cfg.MaxSessions)
	assert.Equal(t, 32, cfg.MaxOpenFiles)
	assert.Equal(t, 10*time.Second, cfg.Timeout)
	assert.Equal(t, 2, cfg.QueueConfig.Get().NumConsumers)
	assert.EqualValues(t, 50, cfg.QueueConfig.Get().QueueSize)
	assert.False(t, cfg.RetryConfig.Enabled)

	_, err = loadConfig(t, "no_root")
	assert.ErrorContains(t, err, "root must be set")

	_, err = loadConfig(t, "bad")
	for _, want := range []string{"fsync must be", "compression must be", "max_pending_rows must be positive",
		"pending_timeout must be positive", "max_sessions must be positive", "max_open_files must be positive"} {
		assert.ErrorContains(t, err, want)
	}
}

func TestRootExpansion(t *testing.T) {
	t.Setenv("HOME", "/home/alice")
	cfg := &Config{Root: "~/archive"}
	got, err := cfg.rootDir()
	require.NoError(t, err)
	assert.Equal(t, "/home/alice/archive", got)
}
