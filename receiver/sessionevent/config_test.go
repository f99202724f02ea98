package sessionevent

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

func loadConfig(t *testing.T, name string) *Config {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	require.NoError(t, err)
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	return cfg
}

func TestConfigLoad(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		cfg := loadConfig(t, "http")
		require.NoError(t, confmap.Validate(cfg))
		h := cfg.HTTP.Get()
		require.NotNil(t, h, "an empty http: section turns HTTP on")
		assert.Equal(t, "localhost:4320", h.ServerConfig.NetAddr.Endpoint)
		assert.Equal(t, 10*time.Second, h.ServerConfig.ReadHeaderTimeout)
		assert.Equal(t, time.Minute, h.ServerConfig.ReadTimeout)
		assert.EqualValues(t, 64<<20, h.MaxBytesInFlight)
		assert.Nil(t, cfg.Files.Get(), "files stays off unless present")
		assert.Equal(t, 4<<20, cfg.MaxLineBytes)
	})
	t.Run("full", func(t *testing.T) {
		cfg := loadConfig(t, "full")
		require.NoError(t, confmap.Validate(cfg))
		h := cfg.HTTP.Get()
		assert.Equal(t, "0.0.0.0:4320", h.ServerConfig.NetAddr.Endpoint)
		assert.EqualValues(t, 64<<20, h.ServerConfig.MaxRequestBodySize)
		assert.EqualValues(t, 256<<20, h.MaxBytesInFlight)
		assert.Equal(t, component.MustNewIDWithName("file_storage", "http"), *h.Storage)
		f := cfg.Files.Get()
		assert.Equal(t, []string{"~/.dsh/sessions/**/session*.jsonl*", "$DSH_HOME/archive/**/session*.jsonl*"}, f.Include)
		assert.Equal(t, "end", f.StartAt)
		assert.Equal(t, 250*time.Millisecond, f.PollInterval)
		assert.Equal(t, component.MustNewID("file_storage"), *f.Storage)
		assert.Equal(t, 1<<20, cfg.MaxLineBytes)
		assert.Equal(t, component.MustNewIDWithName("file_storage", "http"), *cfg.httpStorage())
	})
	t.Run("files", func(t *testing.T) {
		cfg := loadConfig(t, "files")
		require.NoError(t, confmap.Validate(cfg))
		f := cfg.Files.Get()
		require.NotNil(t, f)
		assert.Equal(t, []string{"$DSH_HOME/sessions/**/session*.jsonl*"}, f.Include)
		assert.Equal(t, "beginning", f.StartAt)
		assert.Equal(t, 500*time.Millisecond, f.PollInterval)
		assert.Nil(t, cfg.HTTP.Get())
		assert.Nil(t, cfg.httpStorage())
	})
	for name, msg := range map[string]string{
		"none":       `at least one of "http" or "files"`,
		"bad_files":  "start_at",
		"small_body": "max_request_body_size",
	} {
		t.Run(name, func(t *testing.T) {
			err := confmap.Validate(loadConfig(t, name))
			require.Error(t, err)
			assert.Contains(t, err.Error(), msg)
		})
	}
	t.Run("bad_files/poll", func(t *testing.T) {
		assert.ErrorContains(t, confmap.Validate(loadConfig(t, "bad_files")), "poll_interval")
	})
}

// TestConfigValidateFields: each key's rule, as the collector checks a
// configuration (confmap.Validate: the receiver's Validate, then each
// present section's).
func TestConfigValidateFields(t *testing.T) {
	cfg := httpOnlyConfig()
	cfg.MaxLineBytes = 0
	assert.ErrorContains(t, confmap.Validate(cfg), "max_line_bytes")
	for _, n := range []int{-1, 4097} {
		cfg = httpOnlyConfig()
		cfg.KafkaPartitions = n
		assert.ErrorContains(t, confmap.Validate(cfg), fmt.Sprintf("kafka_partitions must be between 0 (off) and 4096, got %d", n))
	}
	cfg = httpOnlyConfig()
	cfg.KafkaPartitions = 4096
	assert.NoError(t, confmap.Validate(cfg))
	cfg = httpOnlyConfig()
	cfg.HTTP.Get().ServerConfig.NetAddr.Endpoint = " "
	assert.ErrorContains(t, confmap.Validate(cfg), "http: endpoint must not be empty")
	cfg = httpOnlyConfig()
	cfg.HTTP.Get().MaxBytesInFlight = 0
	assert.ErrorContains(t, confmap.Validate(cfg), "http: max_bytes_in_flight must be positive, got 0")
	cfg = httpOnlyConfig()
	cfg.HTTP.Get().ServerConfig.MaxRequestBodySize = 64 << 20
	assert.ErrorContains(t, confmap.Validate(cfg), "http: max_bytes_in_flight (67108864) is below 134479936, what one request of max_request_body_size (67108864) takes")
	cfg.HTTP.Get().MaxBytesInFlight = 134479936
	require.NoError(t, confmap.Validate(cfg))
	cfg = filesOnlyConfig("x", nil)
	cfg.Files.Get().Include = nil
	assert.ErrorContains(t, confmap.Validate(cfg), "include")
	cfg.Files.Get().Include = []string{""}
	assert.ErrorContains(t, confmap.Validate(cfg), "empty pattern")
	require.NoError(t, confmap.Validate(httpOnlyConfig()))
}
