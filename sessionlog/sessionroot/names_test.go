package sessionroot

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The examples of docs/format.md §2.2, and ids meant to escape.
func TestEscapeSessionID(t *testing.T) {
	for id, want := range map[string]string{
		"e128dda9-ed11-4868-8266-0ef90d03c3d6": "e128dda9-ed11-4868-8266-0ef90d03c3d6",
		"a/b":                                  "a~002Fb",
		"x~y":                                  "x~007Ey",
		".":                                    "~002E",
		"..":                                   "~002E~002E",
		"...":                                  "...",
		"../../x":                              "..~002F..~002Fx",
		`..\x`:                                 "..~005Cx",
		"a\x00b":                               "a~0000b",
		"a b":                                  "a~0020b",
		"{{sessionId}}":                        "~007B~007BsessionId~007D~007D",
		"é":                                    "~00E9",
		"\U0001F600":                           "~D83D~DE00", // each half of the surrogate pair
	} {
		got := EscapeSessionID(id)
		assert.Equal(t, want, got, "id %q", id)
		assert.NotContains(t, got, "/")
		assert.NotContains(t, got, `\`)
		assert.NotContains(t, []string{".", ".."}, got)
	}
}

// The examples of docs/format.md §2.3.
func TestProjectDir(t *testing.T) {
	for cwd, want := range map[string]string{
		"/home/alice/my proj": "--home-alice-my~0020proj--",
		`C:\Users\bob`:        "--C-Users-bob--",
		"/":                   "--root--",
		"":                    "_no-cwd",
		"//a///b/":            "--a-b---",
		"/a-/b":               "--a--b--",
		"--x":                 "--x--",
		"/tmp/../..":          "--tmp-..-..--",
		"{{cwd}}":             "--~007B~007Bcwd~007D~007D--",
	} {
		assert.Equal(t, want, ProjectDir(cwd), "cwd %q", cwd)
	}
	long := ProjectDir("/" + strings.Repeat("a", 300))
	assert.Len(t, long, 251+4)
}

func TestFileNames(t *testing.T) {
	for v := 0; v <= 4; v++ {
		for _, z := range []bool{false, true} {
			gv, gz, ok := ParseFileName(FileName(v, z))
			require.True(t, ok)
			assert.Equal(t, v, gv)
			assert.Equal(t, z, gz)
		}
	}
	assert.Equal(t, "session.jsonl", FileName(0, false))
	assert.Equal(t, "session.v4.jsonl.zstd", FileName(4, true))
	for _, bad := range []string{"session.1.jsonl", "session.v0.jsonl", "session.v01.jsonl", "x.jsonl", "session.v.jsonl", "session.jsonl.gz"} {
		_, _, ok := ParseFileName(bad)
		assert.False(t, ok, bad)
	}
}

func TestWithin(t *testing.T) {
	root := t.TempDir()
	p, err := SessionDir(root, "/w", "../../x")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "--w--", "..~002F..~002Fx"), p)
	for _, names := range [][]string{{".."}, {"a", ".."}, {"a/../../b"}, {"."}, {""}, {"a\x00"}} {
		_, err := Within(root, names...)
		assert.ErrorIs(t, err, ErrOutsideRoot, "%q", names)
	}
	_, err = SessionDir(root, "", "")
	assert.Error(t, err)
}

// Whatever the id and cwd, the session directory is exactly two levels
// below the root, and the escape is injective.
func FuzzSessionDirStaysInside(f *testing.F) {
	for _, s := range []string{"../../x", "..", ".", "a\x00b", "a/b", `..\..`, "~002E", "\U0001F600", "\xff\xfe"} {
		f.Add(s, s)
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, id, cwd string) {
		if id == "" {
			return
		}
		p, err := SessionDir(root, cwd, id)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		parts := strings.Split(rel, string(filepath.Separator))
		require.Len(t, parts, 2, "%q", rel)
		for _, s := range parts {
			require.NotContains(t, []string{"", ".", ".."}, s)
		}
		if id != "." && id != ".." {
			// Distinct ids (as UTF-16) give distinct names: the escape of
			// id+"x" differs from that of id, and reads as id's escape + "x".
			require.Equal(t, EscapeSessionID(id)+"x", EscapeSessionID(id+"x"))
		}
	})
}
