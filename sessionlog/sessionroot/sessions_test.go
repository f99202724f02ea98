package sessionroot

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// write creates root/rel with content, and its directories.
func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func TestList(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, root, "--w--/plain/session.jsonl", "{}\n")
	write(t, root, "--w--/migrated/session.jsonl", "{}\n")
	write(t, root, "--w--/migrated/session.v4.jsonl", "{}\n{}\n")
	write(t, root, "--w--/migrated/session.v4.jsonl.zstd", "z")
	write(t, root, "_no-cwd/a~002Fb/session.v2.jsonl", "{}\n")
	write(t, root, "--w--/empty/notes.txt", "not a session file")
	write(t, root, "stray.jsonl", "{}\n")
	write(t, outside, "--x--/secret/session.jsonl", "{}\n")
	write(t, outside, "file/session.jsonl", "{}\n")
	// Links out of the root, at each level: none is followed.
	require.NoError(t, os.Symlink(filepath.Join(outside, "--x--"), filepath.Join(root, "--linked--")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "--x--", "secret"), filepath.Join(root, "--w--", "linked")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "--w--", "filelink"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(outside, "file", "session.jsonl"), filepath.Join(root, "--w--", "filelink", "session.jsonl")))

	got, err := List(root)
	require.NoError(t, err)
	var ids, paths []string
	for _, s := range got {
		ids = append(ids, s.ID)
		paths = append(paths, s.Path)
	}
	assert.Equal(t, []string{"migrated", "plain", "a/b"}, ids)
	assert.Equal(t, []string{"--w--/migrated/session.v4.jsonl.zstd", "--w--/plain/session.jsonl", "_no-cwd/a~002Fb/session.v2.jsonl"}, paths)
	assert.Equal(t, 4, got[0].Version)
	assert.True(t, got[0].Zstd)
	assert.Equal(t, int64(3), got[1].Size)
	assert.Equal(t, "--w--", got[1].Project)

	_, err = List(filepath.Join(root, "missing"))
	assert.Error(t, err)
}

func TestOpenComplete(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	write(t, dir, "--w--/s/session.jsonl", "{\"a\":1}\n{\"b\":")
	write(t, outside, "secret.jsonl", "secret\n")
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.jsonl"), filepath.Join(dir, "--w--", "s", "session.v1.jsonl")))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()

	c, err := OpenComplete(root, "--w--/s/session.jsonl", false)
	require.NoError(t, err)
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	assert.Equal(t, "{\"a\":1}\n", string(b), "the row still being written is left out")

	for _, name := range []string{"../" + filepath.Base(outside) + "/secret.jsonl", filepath.Join(outside, "secret.jsonl"), "--w--/s/session.v1.jsonl", "--w--/s"} {
		_, err := OpenComplete(root, name, false)
		assert.Error(t, err, name)
	}
}
