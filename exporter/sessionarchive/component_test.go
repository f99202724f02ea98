package sessionarchive

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/metadata"
)

func TestComponentFactoryType(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "session_archive", f.Type().String())
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsStability())
}

func TestComponentConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()))
}

// The lifecycle test mdatagen would generate: create and shut down
// without Start, then create, Start and Shutdown twice — with the same
// cfg pointer and host each time — and consume between Start and Shutdown.
func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := factory.CreateDefaultConfig()
	sub, err := cm.Sub(component.NewID(metadata.Type).String())
	require.NoError(t, err)
	require.NoError(t, sub.Unmarshal(cfg))
	cfg.(*Config).Root = t.TempDir()

	t.Run("logs-shutdown", func(t *testing.T) {
		e, err := factory.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
		require.NoError(t, err)
		require.NoError(t, e.Shutdown(context.Background()))
	})
	t.Run("logs-lifecycle", func(t *testing.T) {
		host := componenttest.NewNopHost()
		for range 2 {
			e, err := factory.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
			require.NoError(t, err)
			require.NoError(t, e.Start(context.Background(), host))
			require.NoError(t, e.ConsumeLogs(context.Background(), plog.NewLogs()))
			require.NoError(t, e.Shutdown(context.Background()))
		}
	})
}

// Two exporters may not write one root: their appends would interleave.
func TestOneExporterPerRoot(t *testing.T) {
	root := t.TempDir()
	a := newExporter(t, testConfig(root))
	b, err := NewFactory().CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), testConfig(root))
	require.NoError(t, err)
	assert.ErrorContains(t, b.Start(context.Background(), componenttest.NewNopHost()), "already written")
	require.NoError(t, b.Shutdown(context.Background()))
	require.NoError(t, a.Shutdown(context.Background()))
	c := newExporter(t, testConfig(root)) // free again
	require.NoError(t, c.Shutdown(context.Background()))
}
