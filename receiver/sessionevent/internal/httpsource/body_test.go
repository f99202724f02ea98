package httpsource

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseBodySessionIDOwned: the session id a wrapped line names is kept
// (dedup state, record tracker) as a string of its own, not as a view into
// the line: the line would otherwise stay in memory for as long as the
// session is remembered.
func TestParseBodySessionIDOwned(t *testing.T) {
	body := []byte(`{"sessionId":"wrapped-1","event":{"type":"todo/write","seq":3,"time":1,"data":{"todos":[]}}}` + "\n" +
		`{"sessionId":"wrapped-2","event":{"type":"todo/write","seq":4,"time":1,"data":{"todos":[]}}}` + "\n")
	pb, rerr := parseBody(bytes.NewReader(body), parseOptions{endpoint: endpointLines, maxLine: 1 << 12})
	require.Nil(t, rerr)
	defer pb.release()
	require.Len(t, pb.sessions, 2)
	for _, s := range pb.sessions {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s.id)))
		for _, r := range s.rows {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(r.Bytes)))
			assert.False(t, p >= lo && p < lo+uintptr(len(r.Bytes)), "session id %q is a view into its row", s.id)
		}
	}
}
