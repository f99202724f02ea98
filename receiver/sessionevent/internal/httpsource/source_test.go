package httpsource

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource/dedup"
)

// TestDedupBounded: the dedup memory keeps at most its bound of sessions,
// least recently used first out; a session that left is accepted afresh.
func TestDedupBounded(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := startSource(t, sink, func(s *Source) { s.dedup = dedup.NewStore(3, zap.NewNop()) })
	row := []byte(`{"type":"todo/write","seq":5,"time":1,"data":{"todos":[]}}`)
	for i := range 5 {
		status, body := post(t, s, fmt.Sprint("s", i), row)
		require.Equal(t, http.StatusAccepted, status)
		require.JSONEq(t, `{"accepted":1,"duplicates":0}`, body)
	}
	assert.EqualValues(t, 3, s.DedupSessions())
	_, body := post(t, s, "s4", row)
	assert.JSONEq(t, `{"accepted":0,"duplicates":1}`, body, "s4 is remembered")
	_, body = post(t, s, "s0", row)
	assert.JSONEq(t, `{"accepted":1,"duplicates":0}`, body, "s0 was evicted")
	assert.Equal(t, 6, sink.LogRecordCount())
}
