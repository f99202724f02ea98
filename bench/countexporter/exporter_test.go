package countexporter

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "count", f.Type().String())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.TracesStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.MetricsStability())
	require.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))
}

func TestConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		want    *Config
		wantErr string
	}{
		{name: "", want: &Config{Interval: defaultInterval}},
		{name: "file", want: &Config{StatusFile: "/tmp/status.json", Interval: 250 * time.Millisecond}},
		{name: "zero", wantErr: "interval must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(component.NewIDWithName(Type, tc.name).String())
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg)
		})
	}
}

// The lifecycle mdatagen would generate, per signal: create and shut down
// without Start, then create, Start, consume and Shutdown twice with the
// same cfg pointer and host.
func TestLifecycle(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.StatusFile = filepath.Join(t.TempDir(), "status.json")
	ctx := context.Background()
	create := map[string]func(exporter.Settings) (component.Component, error){
		"logs":    func(s exporter.Settings) (component.Component, error) { return f.CreateLogs(ctx, s, cfg) },
		"traces":  func(s exporter.Settings) (component.Component, error) { return f.CreateTraces(ctx, s, cfg) },
		"metrics": func(s exporter.Settings) (component.Component, error) { return f.CreateMetrics(ctx, s, cfg) },
	}
	for name, newComp := range create {
		t.Run(name+"-shutdown", func(t *testing.T) {
			c, err := newComp(exportertest.NewNopSettings(Type))
			require.NoError(t, err)
			require.NoError(t, c.Shutdown(ctx))
		})
		t.Run(name+"-lifecycle", func(t *testing.T) {
			host := componenttest.NewNopHost()
			for range 2 {
				c, err := newComp(exportertest.NewNopSettings(Type))
				require.NoError(t, err)
				require.NoError(t, c.Start(ctx, host))
				switch e := c.(type) {
				case exporter.Logs:
					require.NoError(t, e.ConsumeLogs(ctx, logs(3)))
				}
				require.NoError(t, c.Shutdown(ctx))
			}
		})
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	assert.Empty(t, registry.cores, "every core released")
}

// The three signals of one component ID count into one status file, which
// is written while items arrive and once more, final, at shutdown.
func TestSharedCountsAndStatusFile(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.StatusFile = filepath.Join(t.TempDir(), "status.json")
	cfg.Interval = 10 * time.Millisecond
	set := exportertest.NewNopSettings(Type) // one ID for all three
	ctx := context.Background()
	host := componenttest.NewNopHost()

	le, err := f.CreateLogs(ctx, set, cfg)
	require.NoError(t, err)
	te, err := f.CreateTraces(ctx, set, cfg)
	require.NoError(t, err)
	me, err := f.CreateMetrics(ctx, set, cfg)
	require.NoError(t, err)
	for _, c := range []component.Component{le, te, me} {
		require.NoError(t, c.Start(ctx, host))
	}

	// Up: an empty status before any item.
	require.Eventually(t, func() bool { _, err := os.Stat(cfg.StatusFile); return err == nil },
		5*time.Second, 5*time.Millisecond)

	before := time.Now().UnixNano()
	require.NoError(t, le.ConsumeLogs(ctx, logs(5)))
	require.NoError(t, le.ConsumeLogs(ctx, logs(2)))
	require.NoError(t, le.ConsumeLogs(ctx, plog.NewLogs())) // nothing: no time recorded
	require.NoError(t, te.ConsumeTraces(ctx, traces(4)))
	require.NoError(t, me.ConsumeMetrics(ctx, metrics(3)))

	var s Status
	require.Eventually(t, func() bool {
		s = readStatus(t, cfg.StatusFile)
		return s.LogRecords == 7 && s.Spans == 4 && s.DataPoints == 3
	}, 5*time.Second, 5*time.Millisecond, "status file written while running")
	assert.False(t, s.Final)
	assert.Equal(t, os.Getpid(), s.PID)
	assert.EqualValues(t, 3, s.LogBatches)
	assert.EqualValues(t, 1, s.SpanBatches)
	assert.EqualValues(t, 1, s.MetricBatches)
	assert.GreaterOrEqual(t, s.FirstUnixNano, before)
	assert.GreaterOrEqual(t, s.LastUnixNano, s.FirstUnixNano)
	assert.Equal(t, s.LastUnixNano, max(s.LogsLastUnixNano, s.SpansLastUnixNano, s.MetricsLastUnixNano))
	assert.LessOrEqual(t, s.LogsLastUnixNano, s.SpansLastUnixNano)

	require.NoError(t, te.ConsumeTraces(ctx, traces(1)))
	require.NoError(t, le.Shutdown(ctx))
	require.NoError(t, te.Shutdown(ctx))
	assert.False(t, readStatus(t, cfg.StatusFile).Final, "final only when the last exporter of the ID stops")
	require.NoError(t, me.Shutdown(ctx))
	s = readStatus(t, cfg.StatusFile)
	assert.True(t, s.Final)
	assert.EqualValues(t, 5, s.Spans)
	assert.GreaterOrEqual(t, s.WrittenUnixNano, s.LastUnixNano)

	matches, err := filepath.Glob(filepath.Join(filepath.Dir(cfg.StatusFile), ".*"))
	require.NoError(t, err)
	assert.Empty(t, matches, "no temp files left behind")
}

// Without a status file the exporter only counts.
func TestNoStatusFile(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig()
	ctx := context.Background()
	e, err := f.CreateTraces(ctx, exportertest.NewNopSettings(Type), cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(ctx, componenttest.NewNopHost()))
	require.NoError(t, e.ConsumeTraces(ctx, traces(2)))
	assert.EqualValues(t, 2, e.(*countExporter).core.spans.Load())
	assert.False(t, e.Capabilities().MutatesData)
	require.NoError(t, e.Shutdown(ctx))
}

func readStatus(t *testing.T, path string) Status {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var s Status
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

func logs(n int) plog.Logs {
	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	for range n {
		lrs.AppendEmpty().Body().SetStr("row")
	}
	return ld
}

func traces(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for range n {
		spans.AppendEmpty().SetName("span")
	}
	return td
}

func metrics(n int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	m := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("m")
	dps := m.SetEmptySum().DataPoints()
	for range n {
		dps.AppendEmpty().SetIntValue(1)
	}
	return md
}
