package dedup

import (
	"context"
	"fmt"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// lookupOnly is a storage client that cannot walk: the store looks each
// session up when it is first asked for.
type lookupOnly struct{ storage.Client }

func newClient() *storagetest.TestClient {
	return storagetest.NewInMemoryClient(component.KindReceiver, component.MustNewID("session_event"), "http")
}

func noRestore(string, logrecord.Position) {}

func noPosition(string) logrecord.Position { return logrecord.Position{} }

// TestStoreBounded: the store keeps at most its bound of sessions, least
// recently used first out, and says which sessions left.
func TestStoreBounded(t *testing.T) {
	ctx := context.Background()
	d := NewStore(3, zap.NewNop())
	var evicted []string
	for i := range 3 {
		_, _, ev := d.Session(ctx, fmt.Sprint("s", i))
		evicted = append(evicted, ev...)
	}
	assert.Empty(t, evicted)
	d.Session(ctx, "s0") // s0 is now the most recently used
	for i := 3; i < 5; i++ {
		_, _, ev := d.Session(ctx, fmt.Sprint("s", i))
		evicted = append(evicted, ev...)
	}
	assert.Equal(t, []string{"s1", "s2"}, evicted)
	assert.EqualValues(t, 3, d.Len())

	st, _, _ := d.Session(ctx, "s3")
	st.AcceptHeader(4)
	assert.Equal(t, 4, d.CurrentVersion("s3"))
	assert.Equal(t, UnknownVersion, d.CurrentVersion("s1"), "an evicted session is forgotten")
}

func TestStoreDefaultBound(t *testing.T) {
	assert.Equal(t, turnmodel.DefaultMaxSessions, NewStore(0, zap.NewNop()).sessions.Max())
}

// TestStoreRestart: what was persisted is known again after a restart,
// whether the client walks (everything loaded at once) or not (each
// session looked up when first asked for); a session evicted since is
// deleted from storage with the next write.
func TestStoreRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(storage.Client) storage.Client
	}{
		{"walk", func(c storage.Client) storage.Client { return c }},
		{"lookup", func(c storage.Client) storage.Client { return lookupOnly{c} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := newClient()
			d := NewStore(2, zap.NewNop())
			require.NoError(t, d.Load(ctx, tc.wrap(client), noRestore))
			a, _, _ := d.Session(ctx, "a")
			a.AcceptHeader(4)
			a.Accept(4, 0, 9)
			require.NoError(t, d.Persist(ctx, []*Session{a}, noPosition))

			d = NewStore(2, zap.NewNop())
			var restored []string
			require.NoError(t, d.Load(ctx, tc.wrap(client), func(id string, _ logrecord.Position) { restored = append(restored, id) }))
			if tc.name == "walk" {
				assert.Equal(t, []string{"a"}, restored)
			}
			a, _, _ = d.Session(ctx, "a")
			assert.Equal(t, 4, a.Version())
			k := a.Known(false, 0)
			assert.True(t, k.Header() && k.Contains(0, 9))
			assert.False(t, k.Contains(10, 10))

			b, _, _ := d.Session(ctx, "b")
			_, _, evicted := d.Session(ctx, "c")
			assert.Equal(t, []string{"a"}, evicted)
			require.NoError(t, d.Persist(ctx, []*Session{b}, noPosition))
			v, err := client.Get(ctx, keyPrefix+"a")
			require.NoError(t, err)
			assert.Nil(t, v, "the evicted session's stored state is deleted")
		})
	}
}

// TestStoreLoadDrops: stored sessions beyond the bound, and unreadable
// ones, are deleted at load.
func TestStoreLoadDrops(t *testing.T) {
	ctx := context.Background()
	client := newClient()
	require.NoError(t, client.Set(ctx, keyPrefix+"bad", []byte("{")))
	require.NoError(t, client.Set(ctx, keyPrefix+"badkey", []byte(`{"current":-1,"gens":{"x":{"hwm":1}}}`)))
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, client.Set(ctx, keyPrefix+id, []byte(`{"current":-1,"gens":{"-1":{"hwm":1}}}`)))
	}
	d := NewStore(2, zap.NewNop())
	require.NoError(t, d.Load(ctx, client, noRestore))
	assert.EqualValues(t, 2, d.Len())
	left := 0
	for _, id := range []string{"a", "b", "c", "bad", "badkey"} {
		if v, _ := client.Get(ctx, keyPrefix+id); v != nil {
			left++
		}
	}
	assert.Equal(t, 2, left)
}

// TestSessionAdopt: rows posted before the session's first header are
// counted as that header's version once it comes.
func TestSessionAdopt(t *testing.T) {
	st := newSession("s", UnknownVersion)
	st.Accept(UnknownVersion, 3, 5)
	k := st.Known(true, 4)
	assert.True(t, k.Adopt)
	assert.Equal(t, 4, k.Version)
	assert.True(t, k.Contains(3, 5), "the prior rows count")
	assert.False(t, k.Header())
	st.Adopt(4)
	st.AcceptHeader(4)
	assert.Equal(t, 4, st.Version())
	k = st.Known(false, 0)
	assert.False(t, k.Adopt)
	assert.True(t, k.Header() && k.Contains(3, 5))
	assert.Nil(t, st.gens[UnknownVersion])
	assert.False(t, st.Known(true, 4).Adopt, "adopted once")
}

// TestLockSessions: the stripes of a request's sessions are taken in one
// order and all released.
func TestLockSessions(t *testing.T) {
	d := NewStore(0, zap.NewNop())
	unlock := d.LockSessions([]string{"a", "b", "a"})
	unlock()
	d.LockSessions([]string{"b", "a"})()
	for i := range d.stripes {
		require.True(t, d.stripes[i].TryLock(), "stripe %d left locked", i)
	}
}
