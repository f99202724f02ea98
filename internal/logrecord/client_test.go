package logrecord

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/client"
)

type authData map[string]any

func (a authData) GetAttribute(name string) any { return a[name] }
func (a authData) GetAttributeNames() []string {
	var n []string
	for k := range a {
		n = append(n, k)
	}
	return n
}

func TestClientFromContext(t *testing.T) {
	with := func(a client.AuthData) context.Context {
		return client.NewContext(context.Background(), client.Info{Auth: a})
	}
	assert.Equal(t, "", ClientFromContext(context.Background()))
	assert.Equal(t, "alice", ClientFromContext(with(authData{"username": "alice", "raw": "x"})))
	assert.Equal(t, "sub-1", ClientFromContext(with(authData{"subject": "sub-1", "membership": []string{"g"}})))
	assert.Equal(t, "", ClientFromContext(with(authData{"raw": "token"})), "an authenticator that names no one")
}
