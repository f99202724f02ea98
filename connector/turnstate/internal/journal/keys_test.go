package journal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSessionOfKey(t *testing.T) {
	for _, k := range []string{SessionKey(`a"b/c`), headerKey(`a"b/c`), chunkKey(`a"b/c`, 7)} {
		id, ok := sessionOfKey(k)
		require.True(t, ok, k)
		assert.Equal(t, `a"b/c`, id, k)
		assert.Equal(t, SessionKey(`a"b/c`), SessionGroup(k))
	}
	_, ok := sessionOfKey("idx/01")
	assert.False(t, ok)
}
