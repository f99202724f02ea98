package filestorage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	contrib "github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

var (
	receiverID  = component.MustNewID("session_event")
	connectorID = component.MustNewID("turn_state")
	exporterID  = component.MustNewIDWithName("otlp_grpc", "jaeger")
)

// started creates and starts the extension on dir, logging into logs.
func started(t *testing.T, dir string) (storage.Extension, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*contrib.Config)
	cfg.Directory = dir
	set := extension.Settings{ID: component.NewID(f.Type()), TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}
	set.Logger = zap.New(core)
	ext, err := f.Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext.(storage.Extension), logs
}

// write stores one key through a client of the extension and closes it.
func write(t *testing.T, ext storage.Extension, kind component.Kind, id component.ID, name, key, value string) {
	t.Helper()
	c, err := ext.GetClient(context.Background(), kind, id, name)
	require.NoError(t, err)
	require.NoError(t, c.Set(context.Background(), key, []byte(value)))
	require.NoError(t, c.Close(context.Background()))
}

func TestIntactFileKeepsItsState(t *testing.T) {
	dir := t.TempDir()
	ext, logs := started(t, dir)
	write(t, ext, component.KindConnector, connectorID, "turns", "k", "v")
	c, err := ext.GetClient(context.Background(), component.KindConnector, connectorID, "turns")
	require.NoError(t, err)
	got, err := c.Get(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))
	require.NoError(t, c.Close(context.Background()))
	assert.Zero(t, logs.Len())
	assert.FileExists(t, filepath.Join(dir, "connector_turn_state__turns"), "the file is where collector-contrib keeps it")
}

// A damaged file — garbage, truncated — is set aside and a fresh one
// opened, with one error line naming both files and what is lost; an
// empty file is a fresh database, nothing to set aside.
func TestDamagedFilesSetAside(t *testing.T) {
	for _, c := range []struct {
		name       string
		kind       component.Kind
		id         component.ID
		purpose    string
		file, lost string
	}{
		{"checkpoints", component.KindReceiver, receiverID, "files", "receiver_session_event__files", "read again from their start"},
		{"dedup", component.KindReceiver, receiverID, "http", "receiver_session_event__http", "accepted again"},
		{"journal", component.KindConnector, connectorID, "turns", "connector_turn_state__turns", "turns open at the last stop are lost"},
		{"queue", component.KindExporter, exporterID, "traces", "exporter_otlp_grpc_jaeger_traces", "requests queued at the last stop are lost"},
	} {
		for _, damage := range []struct {
			name string
			do   func(t *testing.T, path string)
		}{
			{"garbage", func(t *testing.T, path string) {
				require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("not a database ", 300)), 0o600))
			}},
			{"truncated", func(t *testing.T, path string) { require.NoError(t, os.Truncate(path, 100)) }},
			{"meta-zeroed", func(t *testing.T, path string) {
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteAt(make([]byte, 8192), 0) // both meta pages
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}},
		} {
			t.Run(c.name+"/"+damage.name, func(t *testing.T) {
				dir := t.TempDir()
				ext, logs := started(t, dir)
				write(t, ext, c.kind, c.id, c.purpose, "k", "v")
				path := filepath.Join(dir, c.file)
				require.FileExists(t, path)
				damage.do(t, path)

				client, err := ext.GetClient(context.Background(), c.kind, c.id, c.purpose)
				require.NoError(t, err, "a damaged file does not stop the start")
				got, err := client.Get(context.Background(), "k")
				require.NoError(t, err)
				assert.Nil(t, got, "a fresh database")
				require.NoError(t, client.Set(context.Background(), "k2", []byte("v2")), "and a working one")
				require.NoError(t, client.Close(context.Background()))

				aside, _ := filepath.Glob(path + ".damaged-*")
				require.Len(t, aside, 1, "the damaged file is kept, under a new name")
				require.Equal(t, 1, logs.Len(), "one line")
				e := logs.All()[0]
				assert.Equal(t, zap.ErrorLevel, e.Level)
				assert.Contains(t, e.Message, c.lost)
				fields := e.ContextMap()
				assert.Equal(t, path, fields["file"])
				assert.Equal(t, aside[0], fields["set_aside_as"])
			})
		}
	}
}

// An empty file is damage too: bbolt would silently take it for a new
// database, and the state it held is gone.
func TestEmptyFileSetAside(t *testing.T) {
	dir := t.TempDir()
	ext, logs := started(t, dir)
	write(t, ext, component.KindConnector, connectorID, "turns", "k", "v")
	path := filepath.Join(dir, "connector_turn_state__turns")
	require.NoError(t, os.Truncate(path, 0))
	c, err := ext.GetClient(context.Background(), component.KindConnector, connectorID, "turns")
	require.NoError(t, err)
	require.NoError(t, c.Close(context.Background()))
	require.Equal(t, 1, logs.Len())
	assert.Contains(t, logs.All()[0].ContextMap()["damage"], "empty")
	aside, _ := filepath.Glob(path + ".damaged-*")
	assert.Len(t, aside, 1)
}

// A file that does not exist yet is a first start: created, nothing said.
func TestNewFileSaysNothing(t *testing.T) {
	ext, logs := started(t, t.TempDir())
	c, err := ext.GetClient(context.Background(), component.KindReceiver, receiverID, "files")
	require.NoError(t, err)
	require.NoError(t, c.Close(context.Background()))
	assert.Zero(t, logs.Len())
}

// A file the collector may not open is not touched: the error names it
// and the fix. (Root opens any file: the e2e suite runs the collector as
// another user for this case.)
func TestUnreadableFileRefused(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which opens any file; e2e TestDamagedState covers it with the collector as another user")
	}
	dir := t.TempDir()
	ext, _ := started(t, dir)
	write(t, ext, component.KindConnector, connectorID, "turns", "k", "v")
	path := filepath.Join(dir, "connector_turn_state__turns")
	require.NoError(t, os.Chmod(path, 0))
	_, err := ext.GetClient(context.Background(), component.KindConnector, connectorID, "turns")
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "give the collector's user read and write access")
	aside, _ := filepath.Glob(path + ".damaged-*")
	assert.Empty(t, aside, "not set aside")
}

func TestSanitizeAsContrib(t *testing.T) {
	assert.Equal(t, "exporter_otlp_grpc_a~002Fb_traces", sanitize("exporter_otlp_grpc_a/b_traces"))
	assert.Equal(t, "x~007Ey", sanitize("x~y"))
}
