package glob

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

func TestExpand(t *testing.T) {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	t.Setenv("DSH_HOME", "")
	assert.Equal(t, filepath.Join(home, ".dsh", "sessions", "**", "x"), Expand("$DSH_HOME/sessions/**/x"))
	assert.Equal(t, filepath.Join(home, ".dsh", "s"), Expand("~/.dsh/s"))
	t.Setenv("DSH_HOME", "/srv/dsh")
	assert.Equal(t, "/srv/dsh/sessions/*", Expand("${DSH_HOME}/sessions/*"))
	assert.Equal(t, "/a/~b", Expand("/a/~b"), "only a leading ~ is the home")
}

func TestFiles(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{
		"--p--/a/session.jsonl", "--p--/a/session.v4.jsonl.zstd", "--p--/b/session.v2.jsonl",
		"--q--/c/session.jsonl.tmp.json", "--q--/c/other.jsonl", "deep/x/y/z/session.v1.jsonl", "session.jsonl",
	} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), nil, 0o644))
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
	}, rel(Files([]string{filepath.Join(root, "**", "session*.jsonl*")})))
	assert.Equal(t, []string{"--p--/b/session.v2.jsonl"}, rel(Files([]string{filepath.Join(root, "*", "b", "*.jsonl")})))
	assert.Empty(t, Files([]string{filepath.Join(root, "missing", "**", "*")}))
	assert.Equal(t, []string{"--p--/a/session.jsonl", "--p--/a/session.v4.jsonl.zstd", "--p--/b/session.v2.jsonl"},
		rel(selectAndSort(Files([]string{filepath.Join(root, "--p--", "*", "*")}))), "no generation choice in the glob itself")
	assert.Equal(t, []string{"--p--/a/session.v4.jsonl.zstd", "--p--/b/session.v2.jsonl"},
		rel(selectAndSort(sessionroot.SelectGenerations(Files([]string{filepath.Join(root, "--p--", "*", "*")})))), "highest generation per directory")
}

func selectAndSort(p []string) []string {
	out := append([]string(nil), p...)
	slices.Sort(out)
	return out
}
