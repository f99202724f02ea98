package filesource

import (
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/consumer/consumertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
)

// TestWrappedSessionOwned: the session a wrapped row names is kept in
// the file's checkpoint (its seq high-water mark) as a string of its own,
// not as a view into the row: a row views its file chunk, which the
// checkpoint would otherwise keep alive for as long as the file is tailed.
func TestWrappedSessionOwned(t *testing.T) {
	root := t.TempDir()
	var rows []string
	for seq := range 5 {
		rows = append(rows, `{"sessionId":"wrapped-`+strconv.Itoa(seq%2)+`","event":{"type":"todo/write","seq":`+strconv.Itoa(seq)+
			`,"time":1788000000001,"data":{"todos":[]}}}`)
	}
	writeFile(t, sessionPath(root, "w", "session.v4.jsonl"), lines(rows))
	sink := new(consumertest.LogsSink)
	s := startSource(t, root, 4<<20, sink)
	settle(t, sink, len(rows))
	s.stop(t)
	type span struct{ lo, hi uintptr }
	var bodies []span
	for _, lr := range logRecords(sink.AllLogs()) {
		b := lr.Body().Str()
		lo := uintptr(unsafe.Pointer(unsafe.StringData(b)))
		bodies = append(bodies, span{lo, lo + uintptr(len(b))})
	}
	keys := 0
	for _, tf := range s.files {
		for _, cp := range []checkpoint.Checkpoint{tf.cp, tf.live.pending} {
			for k := range cp.HWM {
				keys++
				p := uintptr(unsafe.Pointer(unsafe.StringData(k)))
				for _, b := range bodies {
					assert.False(t, p >= b.lo && p < b.hi, "HWM key %q is a view into a delivered row", k)
				}
			}
		}
	}
	assert.Equal(t, 4, keys, "two sessions in the committed and the pending checkpoint")
}
