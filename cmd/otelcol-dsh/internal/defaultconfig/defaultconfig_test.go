package defaultconfig

import (
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

func TestNeedsDefault(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"otelcol-dsh"}, true},
		{[]string{"otelcol-dsh", "--set=processors::batch::timeout=1s"}, true},
		{[]string{"otelcol-dsh", "--set", "exporters::debug/turns::verbosity=basic"}, true},
		{[]string{"otelcol-dsh", "--feature-gates", "-pdata.useProtoPooling"}, true},
		{[]string{"otelcol-dsh", "--config=my.yaml"}, false},
		{[]string{"otelcol-dsh", "--config", "my.yaml"}, false},
		{[]string{"otelcol-dsh", "-config=my.yaml"}, false},
		{[]string{"otelcol-dsh", "components"}, false},
		{[]string{"otelcol-dsh", "featuregate"}, false},
		{[]string{"otelcol-dsh", "help"}, false},
		{[]string{"otelcol-dsh", "validate", "--config=x.yaml"}, false},
		{[]string{"otelcol-dsh", "validate"}, true},
		{[]string{"otelcol-dsh", "print-config"}, true},
		{[]string{"otelcol-dsh", "print-config", "--mode=unredacted"}, true},
		{[]string{"otelcol-dsh", "--set", "a=b", "print-config"}, true},
		{[]string{}, false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			assert.Equal(t, tt.want, NeedsDefault(tt.args))
		})
	}
	p := Paths{Sessions: "/s", State: "/t"}
	assert.Equal(t, "--config=yaml:"+YAML(p), Flag(p))
}

func TestYAML(t *testing.T) {
	p := Paths{Sessions: `/home/o'neil/my "dsh"/$HOME/sessions`, State: "/state/dir"}
	r, err := confmap.NewRetrievedFromYAML([]byte(YAML(p)))
	require.NoError(t, err)
	conf, err := r.AsConf()
	require.NoError(t, err)

	include := conf.Get("receivers::session_event::files::include").([]any)
	// $ is doubled so that the collector's expansion gives it back unchanged.
	assert.Equal(t, []any{`/home/o'neil/my "dsh"/$$HOME/sessions/**/session*.jsonl*`}, include)
	assert.Equal(t, "beginning", conf.Get("receivers::session_event::files::start_at"))
	assert.Equal(t, "file_storage/dsh", conf.Get("receivers::session_event::files::storage"))
	assert.Equal(t, "/state/dir", conf.Get("extensions::file_storage/dsh::directory"))
	assert.Equal(t, "localhost:4320", conf.Get("receivers::session_event::http::endpoint"))
	// A trickling client is cut off, and the bodies decoded at once are
	// bounded, in the configuration a developer leaves running.
	assert.Equal(t, "10s", conf.Get("receivers::session_event::http::read_header_timeout"))
	assert.Equal(t, "60s", conf.Get("receivers::session_event::http::read_timeout"))
	assert.Equal(t, 67108864, conf.Get("receivers::session_event::http::max_bytes_in_flight"))
	assert.Equal(t, "localhost:8889", conf.Get("exporters::prometheus::endpoint"))
	assert.NotContains(t, YAML(p), "@", "every placeholder is replaced")
}

func TestUserPaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)

	t.Setenv("DSH_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	p, err := UserPaths()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(home, ".dsh", "sessions"), p.Sessions)
	assert.True(t, strings.HasPrefix(p.State, home), "state %q under home %q", p.State, home)
	assert.True(t, strings.HasSuffix(p.State, filepath.Join("dshtrace", "otelcol-dsh")))

	dshHome := filepath.Join(home, "elsewhere")
	t.Setenv("DSH_HOME", dshHome)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "xdg"))
	p, err = UserPaths()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dshHome, "sessions"), p.Sessions)
	if runtime.GOOS == "linux" {
		assert.Equal(t, filepath.Join(home, "xdg", "dshtrace", "otelcol-dsh"), p.State)
	}
}

func TestListenersMove(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DSH_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv(EnvHTTP, "")
	t.Setenv(EnvMetrics, "")
	t.Setenv(EnvTelemetry, "")
	p, err := UserPaths()
	require.NoError(t, err)
	conf := resolve(t, p)
	assert.Equal(t, DefaultHTTP, conf.Get("receivers::session_event::http::endpoint"))
	assert.Equal(t, DefaultMetrics, conf.Get("exporters::prometheus::endpoint"))
	reader := conf.Get("service::telemetry::metrics::readers").([]any)[0].(map[string]any)
	prom := reader["pull"].(map[string]any)["exporter"].(map[string]any)["prometheus"].(map[string]any)
	assert.Equal(t, "localhost", prom["host"])
	assert.Equal(t, 8888, prom["port"])

	t.Setenv(EnvHTTP, "127.0.0.1:14320")
	t.Setenv(EnvMetrics, "0.0.0.0:18889")
	t.Setenv(EnvTelemetry, "[::1]:18888")
	p, err = UserPaths()
	require.NoError(t, err)
	conf = resolve(t, p)
	assert.Equal(t, "127.0.0.1:14320", conf.Get("receivers::session_event::http::endpoint"))
	assert.Equal(t, "0.0.0.0:18889", conf.Get("exporters::prometheus::endpoint"))
	reader = conf.Get("service::telemetry::metrics::readers").([]any)[0].(map[string]any)
	prom = reader["pull"].(map[string]any)["exporter"].(map[string]any)["prometheus"].(map[string]any)
	assert.Equal(t, "::1", prom["host"])
	assert.Equal(t, 18888, prom["port"])

	for _, bad := range []string{"4320", "localhost:http", "localhost:70000", ":"} {
		t.Setenv(EnvTelemetry, bad)
		_, err := UserPaths()
		assert.ErrorContains(t, err, EnvTelemetry, "%q", bad)
	}
}

func resolve(t *testing.T, p Paths) *confmap.Conf {
	t.Helper()
	r, err := confmap.NewRetrievedFromYAML([]byte(YAML(p)))
	require.NoError(t, err)
	conf, err := r.AsConf()
	require.NoError(t, err)
	return conf
}

func TestPreflight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	taken := ln.Addr().String()

	free, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	freeAddr := free.Addr().String()
	free.Close()

	p := Paths{HTTP: freeAddr, Metrics: freeAddr, Telemetry: taken}
	err = Preflight(p.Listeners())
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "\n", "one line")
	assert.Contains(t, msg, taken+" is in use")
	assert.Contains(t, msg, "the collector's own metrics")
	assert.Contains(t, msg, EnvTelemetry)

	p.Telemetry = freeAddr
	assert.NoError(t, Preflight(p.Listeners()))
}

func TestRuns(t *testing.T) {
	assert.True(t, Runs([]string{"otelcol-dsh"}))
	assert.True(t, Runs([]string{"otelcol-dsh", "--feature-gates", "x"}))
	assert.False(t, Runs([]string{"otelcol-dsh", "validate"}))
	assert.False(t, Runs([]string{"otelcol-dsh", "print-config"}))
	assert.False(t, Runs([]string{"otelcol-dsh", "--set=a=b"}))
	assert.False(t, Runs([]string{}))
}
