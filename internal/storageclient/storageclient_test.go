package storageclient

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
)

// TestOpenOptional: no id is a client that keeps nothing; an id names a
// storage extension of the host, or the error says what is wrong with it.
func TestOpenOptional(t *testing.T) {
	ctx := context.Background()
	self := component.MustNewID("session_event")
	mem, other, missing := storagetest.NewStorageID("mem"), storagetest.NewNonStorageID("other"), component.MustNewID("missing")
	host := storagetest.NewStorageHost().WithInMemoryStorageExtension("mem").WithNonStorageExtension("other")
	for _, tc := range []struct {
		name  string
		id    *component.ID
		keeps bool
		err   string
	}{
		{name: "none", id: nil},
		{name: "storage", id: &mem, keeps: true},
		{name: "missing", id: &missing, err: "owner: storage extension missing not found"},
		{name: "not storage", id: &other, err: "is not a storage extension"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := OpenOptional(ctx, host, tc.id, component.KindReceiver, self, "files", "owner")
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			defer func() { require.NoError(t, c.Close(ctx)) }()
			require.NoError(t, c.Set(ctx, "k", []byte("v")))
			v, err := c.Get(ctx, "k")
			require.NoError(t, err)
			if tc.keeps {
				assert.Equal(t, []byte("v"), v)
			} else {
				assert.Nil(t, v)
			}
		})
	}
}
