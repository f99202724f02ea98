package turnstate

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	custom := createDefaultConfig()
	custom.AgentName = "coder"
	custom.DanglingTimeout = 5 * time.Minute
	custom.MaxOpenTurns = 1000
	custom.MaxSessions = 500
	custom.MetricsFlushInterval = 30 * time.Second
	custom.CaptureContent = true
	custom.MaxContentBytes = 4096
	custom.MaxAttributeValues = 50
	custom.GapTimeout = 2 * time.Second
	custom.ReorderWindow = 256
	storageID := component.MustNewIDWithName("file_storage", "turns")
	custom.Storage = &storageID

	tests := []struct {
		name    string
		want    *Config
		wantErr []string // substrings of the validation error
	}{
		{name: "", want: createDefaultConfig()},
		{name: "custom", want: custom},
		{name: "empty_agent", wantErr: []string{"agent_name must not be empty"}},
		{name: "zero_timeout", wantErr: []string{"dangling_timeout must be a positive duration, got 0s"}},
		{name: "negative_limits", wantErr: []string{
			"max_open_turns must be positive, got -1", "max_sessions must be positive, got 0", "reorder_window must be positive, got 0"}},
		{name: "zero_flush", wantErr: []string{"metrics_flush_interval must be a positive duration"}},
		{name: "zero_content", wantErr: []string{"max_content_bytes must be positive", "max_attribute_values must be positive"}},
		{name: "gap_not_shorter", wantErr: []string{"gap_timeout (10s) must be shorter than dangling_timeout (10s)"}},
	}
	for _, tt := range tests {
		t.Run("turn_state/"+tt.name, func(t *testing.T) {
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			cfg := NewFactory().CreateDefaultConfig()
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tt.wantErr != nil {
				require.Error(t, err)
				for _, s := range tt.wantErr {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

func TestDefaultConfigMatchesDesign(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	assert.Equal(t, "dsh", cfg.AgentName)
	assert.Equal(t, 15*time.Minute, cfg.DanglingTimeout)
	assert.Equal(t, 100000, cfg.MaxOpenTurns)
	assert.Equal(t, 100000, cfg.MaxSessions)
	assert.Equal(t, 15*time.Second, cfg.MetricsFlushInterval)
	assert.False(t, cfg.CaptureContent)
	assert.Equal(t, 16384, cfg.MaxContentBytes)
	assert.Equal(t, 100, cfg.MaxAttributeValues)
	assert.Equal(t, 5*time.Second, cfg.GapTimeout)
	assert.Equal(t, 4096, cfg.ReorderWindow)
	require.NoError(t, cfg.Validate())
}
