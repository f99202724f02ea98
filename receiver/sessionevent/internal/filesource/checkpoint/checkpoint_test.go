package checkpoint

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
)

// TestCover: a row is emitted before when its first seq is at or under its
// session's mark; the mark only rises.
func TestCover(t *testing.T) {
	var c Checkpoint
	for i, tc := range []struct {
		session     string
		first, last int64
		emitted     bool
		hwm         int64
	}{
		{"a", 0, 0, false, 0},
		{"a", 1, 3, false, 3}, // a packed row
		{"a", 2, 2, true, 3},  // under the mark
		{"b", 0, 0, false, 0}, // another session, its own mark
		{"a", 3, 5, true, 5},  // starts under the mark, raises it
		{"a", 7, 7, false, 7}, // after a gap
		{"a", 6, 6, true, 7},  // the gap is not filled later
	} {
		assert.Equal(t, tc.emitted, c.Cover(tc.session, tc.first, tc.last), "row %d", i)
		assert.Equal(t, tc.hwm, c.HWM[tc.session], "row %d", i)
	}
	d := c.Clone()
	d.HWM["a"] = 100
	assert.EqualValues(t, 7, c.HWM["a"], "a clone shares nothing")
	assert.True(t, SameProgress(c, c.Clone()))
	assert.False(t, SameProgress(c, d))
}

// TestTail: a checkpoint notices other bytes before its offset, and none
// when the file is only longer.
func TestTail(t *testing.T) {
	content := []byte("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ\n")
	c := Checkpoint{Offset: int64(len(content))}
	c.KeepTail(bytes.NewReader(content))
	assert.Equal(t, content[len(content)-tailBytes:], c.Tail)
	assert.False(t, c.Rewritten(bytes.NewReader(append(bytes.Clone(content), "more\n"...))))
	other := bytes.Clone(content)
	other[len(other)-2] = 'X'
	assert.True(t, c.Rewritten(bytes.NewReader(other)))
	assert.True(t, c.Rewritten(bytes.NewReader(content[:10])), "shorter than the offset")

	short := Checkpoint{Offset: 3}
	short.KeepTail(bytes.NewReader(content))
	assert.Equal(t, []byte("012"), short.Tail, "a tail no longer than the offset")
	assert.False(t, (&Checkpoint{Offset: 5}).Rewritten(bytes.NewReader(nil)), "no tail kept: nothing to compare")
}

// TestFileID: the same file has the same id; another file another.
func TestFileID(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, nil, 0o644))
	require.NoError(t, os.WriteFile(b, nil, 0o644))
	fa, err := os.Stat(a)
	require.NoError(t, err)
	fa2, err := os.Stat(a)
	require.NoError(t, err)
	fb, err := os.Stat(b)
	require.NoError(t, err)
	assert.Equal(t, FileID(fa), FileID(fa2))
	if FileID(fa) != "" {
		assert.NotEqual(t, FileID(fa), FileID(fb))
	}
}

func newClient() *storagetest.TestClient {
	return storagetest.NewInMemoryClient(component.KindReceiver, component.MustNewID("session_event"), "files")
}

// TestStore: checkpoints and the first-poll marker round-trip through
// storage, in the stored form of earlier versions; an unreadable one is
// found and says so; without persistence nothing is written.
func TestStore(t *testing.T) {
	ctx := context.Background()
	client := newClient()
	s := NewStore(client, true)
	started, err := s.Started(ctx)
	require.NoError(t, err)
	assert.False(t, started)
	require.NoError(t, s.MarkStarted(ctx))
	started, err = s.Started(ctx)
	require.NoError(t, err)
	assert.True(t, started)

	_, found, err := s.Load(ctx, "/a")
	require.NoError(t, err)
	assert.False(t, found)
	cp := Checkpoint{Offset: 42, ID: "1:2", Tail: []byte("xy"), Session: "s", HWM: map[string]int64{"s": 7}, Header: true}
	require.NoError(t, s.Save(ctx, "/a", cp))
	raw, err := client.Get(ctx, "file//a")
	require.NoError(t, err)
	assert.JSONEq(t, `{"offset":42,"id":"1:2","tail":"eHk=","session":"s","hwm":{"s":7},"header":true}`, string(raw))
	got, found, err := s.Load(ctx, "/a")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, cp, got)

	require.NoError(t, client.Set(ctx, "file//bad", []byte("{")))
	got, found, err = s.Load(ctx, "/bad")
	assert.ErrorContains(t, err, "unreadable checkpoint")
	assert.True(t, found)
	assert.Zero(t, got)

	require.NoError(t, s.Delete(ctx, "/a"))
	_, found, err = s.Load(ctx, "/a")
	require.NoError(t, err)
	assert.False(t, found)

	memory := NewStore(client, false)
	require.NoError(t, memory.Save(ctx, "/m", cp))
	_, found, _ = memory.Load(ctx, "/m")
	assert.False(t, found, "not persisted")
	require.NoError(t, memory.Close(ctx))
}
