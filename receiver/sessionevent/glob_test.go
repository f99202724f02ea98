package sessionevent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

func TestExpandPattern(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	t.Setenv("DSH_HOME", "")
	assert.Equal(t, filepath.Join(home, ".dsh", "sessions", "**", "x"), expandPattern("$DSH_HOME/sessions/**/x"))
	assert.Equal(t, filepath.Join(home, ".dsh", "s"), expandPattern("~/.dsh/s"))
	t.Setenv("DSH_HOME", "/srv/dsh")
	assert.Equal(t, "/srv/dsh/sessions/*", expandPattern("${DSH_HOME}/sessions/*"))
	assert.Equal(t, "/a/~b", expandPattern("/a/~b"), "only a leading ~ is the home")
}

func TestGlobFiles(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		"--p--/a/session.jsonl", "--p--/a/session.v4.jsonl.zstd", "--p--/b/session.v2.jsonl",
		"--q--/c/session.jsonl.tmp.json", "--q--/c/other.jsonl", "deep/x/y/z/session.v1.jsonl", "session.jsonl",
	} {
		writeFile(t, filepath.Join(root, p), nil)
	}
	rel := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			r, err := filepath.Rel(root, p)
			require.NoError(t, err)
			out = append(out, filepath.ToSlash(r))
		}
		return out
	}
	assert.Equal(t, []string{
		"--p--/a/session.jsonl", "--p--/a/session.v4.jsonl.zstd", "--p--/b/session.v2.jsonl",
		"--q--/c/session.jsonl.tmp.json", "deep/x/y/z/session.v1.jsonl", "session.jsonl",
	}, rel(globFiles([]string{filepath.Join(root, "**", "session*.jsonl*")})))
	assert.Equal(t, []string{"--p--/b/session.v2.jsonl"}, rel(globFiles([]string{filepath.Join(root, "*", "b", "*.jsonl")})))
	assert.Empty(t, globFiles([]string{filepath.Join(root, "missing", "**", "*")}))
	assert.Equal(t, []string{"--p--/a/session.jsonl", "--p--/a/session.v4.jsonl.zstd", "--p--/b/session.v2.jsonl"},
		rel(selectAndSort(globFiles([]string{filepath.Join(root, "--p--", "*", "*")}))), "no generation choice in the glob itself")
	assert.Equal(t, []string{"--p--/a/session.v4.jsonl.zstd", "--p--/b/session.v2.jsonl"},
		rel(selectAndSort(sessionroot.SelectGenerations(globFiles([]string{filepath.Join(root, "--p--", "*", "*")})))), "highest generation per directory")
}

func selectAndSort(p []string) []string {
	out := append([]string(nil), p...)
	return sorted(out)
}

func TestUnescapeSessionID(t *testing.T) {
	for in, want := range map[string]string{
		"e128dda9-ed11-4868-8266-0ef90d03c3d6": "e128dda9-ed11-4868-8266-0ef90d03c3d6",
		"a~002Fb":                              "a/b",
		"x~007Ey":                              "x~y",
		"~002E~002E":                           "..",
		"~D83D~DE00":                           "😀",
		"sp~0020ace":                           "sp ace",
	} {
		got, ok := sessionroot.UnescapeSessionID(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "a~00", "a~zzzz", "a b", "a~002f"} {
		_, ok := sessionroot.UnescapeSessionID(bad)
		assert.False(t, ok, bad)
	}
}
