package sessionarchive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// named is a client's auth data as basicauth gives it.
type named string

func (n named) GetAttribute(name string) any {
	if name == "username" {
		return string(n)
	}
	return nil
}

func (named) GetAttributeNames() []string { return []string{"username"} }

// Each client's sessions are archived in a session root of their own,
// under @clients: two clients' sessions of one id are two files, each
// byte for byte its client's log, and a session of no client stays where
// it always was. Whether the records name their client or the request's
// context does, the file is the same.
func TestClientsArchivedApart(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "dialects", "v4-tools.jsonl")
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	recs := corpusRecords(t, path, "shared-1")
	id := recs[0].session
	keyed := func(who string) []record {
		out := make([]record, len(recs))
		for i, r := range recs {
			out[i] = record{session: clientid.Key(who, r.session), lr: r.lr}
		}
		return out
	}
	root := t.TempDir()
	cfg := testConfig(root)
	exp := newExporter(t, cfg)
	require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(keyed("alice"))))
	// bob's records name no client: his request's context does.
	ctx := client.NewContext(context.Background(), client.Info{Auth: named("bob")})
	require.NoError(t, exp.ConsumeLogs(ctx, logsOf(recs)))
	require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(recs)))
	require.NoError(t, exp.Shutdown(context.Background()))

	hdr := headerOf(t, path)
	for _, who := range []string{"alice", "bob", ""} {
		croot, err := sessionroot.ClientRoot(root, who)
		require.NoError(t, err)
		got, err := os.ReadFile(archivePath(t, croot, hdr.Cwd, id, hdr.Version, false))
		require.NoError(t, err, "client %q", who)
		assert.True(t, bytes.Equal(want, got), "client %q: byte for byte", who)
	}
	assert.Len(t, files(t, root), 3)
}
