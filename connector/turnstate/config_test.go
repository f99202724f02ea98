package turnstate

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/sampling"
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

	f := func(v float64) *float64 { return &v }
	priced := createDefaultConfig()
	priced.BuiltinPrices = false
	june := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	priced.Prices = []PriceConfig{
		{Provider: "acme", Model: "acme-1", Input: f(2), Output: f(8), Until: june},
		{Provider: "acme", Model: "acme-1", Input: f(1), CacheRead: f(0.1), Output: f(4), From: june},
	}

	secure := createDefaultConfig()
	secure.Changelog = &ChangelogConfig{Brokers: []string{"kafka-1:9093", "kafka-2:9093"}, Owner: "node-a",
		TLS:  &configtls.ClientConfig{Config: configtls.Config{CAFile: "/etc/kafka/ca.pem"}},
		Auth: &ChangelogAuth{Mechanism: "SCRAM-SHA-512", Username: "dsh", Password: "s3cret"}}

	sampled := createDefaultConfig()
	sampled.Sampling = sampling.Config{SessionRatio: 0.1, MaxHeldSpans: 20000,
		KeepOver: sampling.Limits{Cost: 0.5, Tokens: 200000, Duration: 10 * time.Minute, Steps: 40}}

	tests := []struct {
		name    string
		want    *Config
		wantErr []string // substrings of the validation error
		// unmarshalErr is a substring of the decoding error
		unmarshalErr string
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
		{name: "prices", want: priced},
		{name: "negative_price", wantErr: []string{"input price must be a finite number ≥ 0, got -1"}},
		{name: "overlapping_prices", wantErr: []string{"prices of acme/acme-1 overlap"}},
		{name: "incomplete_price", wantErr: []string{"prices[0] (acme/acme-1): input and output prices are required"}},
		{name: "bad_price_date", unmarshalErr: "prices[0].from"},
		{name: "changelog_secure", want: secure},
		{name: "changelog_bad_compression", wantErr: []string{`changelog::compression "brotli": want one of none, gzip, snappy, lz4, zstd`}},
		{name: "sampling", want: sampled},
		{name: "sampling_bad", wantErr: []string{"sampling::session_ratio must be between 0 and 1, got 2",
			"sampling::max_held_spans must be positive, got -1", "sampling::keep_over: cost, tokens, duration and steps must not be negative"}},
		{name: "changelog_bad_auth", wantErr: []string{`changelog::auth::mechanism "GSSAPI"`, "changelog::auth::username must not be empty"}},
	}
	for _, tt := range tests {
		t.Run("turn_state/"+tt.name, func(t *testing.T) {
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			cfg := NewFactory().CreateDefaultConfig()
			if tt.unmarshalErr != "" {
				err := sub.Unmarshal(cfg)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.unmarshalErr)
				return
			}
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
	assert.Equal(t, 1.0, cfg.Sampling.SessionRatio, "sampling keeps everything by default")
	assert.False(t, cfg.Sampling.On())
	require.NoError(t, cfg.Validate())
}

// The configured prices come before the built-in ones: a model configured
// is priced by its entries alone, by date; the others keep the built-in
// prices unless builtin_prices is off.
func TestPriceTable(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cfg := createDefaultConfig()
	cfg.Prices = []PriceConfig{
		{Provider: "deepseek-official", Model: "deepseek-v4-flash", Input: f(1), Output: f(2), Until: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)},
		{Provider: "acme", Model: "acme-1", Input: f(3), CacheWrite: f(3.75), Output: f(15), From: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)},
	}
	require.NoError(t, cfg.Validate())
	tb, err := cfg.priceTable()
	require.NoError(t, err)
	may := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	july := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	p, ok := tb.Lookup("deepseek-official", "deepseek-v4-flash", may)
	require.True(t, ok)
	assert.Equal(t, 1.0, p.Input)
	assert.Equal(t, 1.0, p.CacheRead, "cache_read left out costs the input price")
	_, ok = tb.Lookup("deepseek-official", "deepseek-v4-flash", july)
	assert.False(t, ok, "a configured model is priced by its own entries only")
	p, ok = tb.Lookup("deepseek-official", "deepseek-v4-pro", july)
	require.True(t, ok, "built-in prices stay for the models not configured")
	assert.Equal(t, 0.435, p.Input)
	p, ok = tb.Lookup("acme", "acme-1", july)
	require.True(t, ok)
	assert.Equal(t, 3.75, p.CacheWrite)
	_, ok = tb.Lookup("acme", "acme-1", may)
	assert.False(t, ok, "no price before from")

	cfg.BuiltinPrices = false
	tb, err = cfg.priceTable()
	require.NoError(t, err)
	_, ok = tb.Lookup("deepseek-official", "deepseek-v4-pro", july)
	assert.False(t, ok, "builtin_prices: false drops the built-in prices")
}
