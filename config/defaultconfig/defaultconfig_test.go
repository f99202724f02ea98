package defaultconfig

import (
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
