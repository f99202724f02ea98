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

	connturnstate "github.com/dshtrace/dshtrace/connector/turnstate"
	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
)

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	custom := createDefaultConfig()
	custom.MaxSessions = 500
	custom.MaxOpenTurns = 1000
	custom.DanglingTimeout = 5 * time.Minute
	tests := []struct {
		name         string
		want         *Config
		unmarshalErr string
		wantErr      []string
	}{
		{name: "", want: createDefaultConfig()},
		{name: "custom", want: custom},
		{name: "zero_sessions", wantErr: []string{"max_sessions must be positive, got 0"}},
		{name: "negative", wantErr: []string{"max_sessions must be positive, got -3", "max_open_turns must be positive, got -1",
			"dangling_timeout must be a positive duration, got -1s"}},
		{name: "unknown_key", unmarshalErr: "gap_timeout"},
	}
	for _, tt := range tests {
		t.Run("turn_state/"+tt.name, func(t *testing.T) {
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			cfg := NewFactory().CreateDefaultConfig()
			err = sub.Unmarshal(cfg)
			if tt.unmarshalErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.unmarshalErr)
				return
			}
			require.NoError(t, err)
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

// The bounds default to the connector's: with both at their defaults they
// close and forget the same turns and sessions.
func TestDefaultsAreTheConnectors(t *testing.T) {
	p := NewFactory().CreateDefaultConfig().(*Config)
	c := connturnstate.NewFactory().CreateDefaultConfig().(*connturnstate.Config)
	assert.Equal(t, c.MaxSessions, p.MaxSessions)
	assert.Equal(t, c.MaxOpenTurns, p.MaxOpenTurns)
	assert.Equal(t, c.DanglingTimeout, p.DanglingTimeout)
	require.NoError(t, p.Validate())
}
