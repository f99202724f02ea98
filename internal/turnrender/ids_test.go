package turnrender

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// referenceKey is the id key as first specified: a length-prefixed tag, then
// each field length-prefixed, numbers in decimal. The allocation-free
// builders must hash exactly these bytes, or every id would change.
func referenceKey(tag string, fields ...string) [32]byte {
	buf := binary.AppendUvarint(nil, uint64(len(tag)))
	buf = append(buf, tag...)
	for _, f := range fields {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	return sha256.Sum256(buf)
}

func TestIDsMatchTheirKeys(t *testing.T) {
	d := func(n int64) string { return strconv.FormatInt(n, 10) }
	long := string(make([]byte, 300)) // longer than the stack buffer
	for _, session := range []string{"", "s", "5b0c0a3e-6a55-4c1f-a3c1-0d6c2f3a9e10", long} {
		for _, turn := range []int64{0, 1, 42, -3, 1 << 53} {
			h := referenceKey("trace", session, d(turn))
			tr := TraceID(session, turn)
			assert.Equal(t, h[:16], tr[:])

			h = referenceKey("turn", session, d(turn))
			id := TurnSpanID(session, turn)
			assert.Equal(t, h[:8], id[:])

			h = referenceKey("step", session, d(turn), d(7))
			id = StepSpanID(session, turn, 7)
			assert.Equal(t, h[:8], id[:])

			h = referenceKey("chat", session, d(turn), d(7), "2")
			id = ChatSpanID(session, turn, 7, 2)
			assert.Equal(t, h[:8], id[:])

			h = referenceKey("tool", session, d(turn), d(7), "call_1")
			id = ToolSpanID(session, turn, 7, "call_1", "")
			assert.Equal(t, h[:8], id[:])

			h = referenceKey("subcall", session, d(turn), d(7), "call_1", "call_1:ptc:1")
			id = ToolSpanID(session, turn, 7, "call_1", "call_1:ptc:1")
			assert.Equal(t, h[:8], id[:])
		}
	}
}

func TestIDsDoNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		TraceID("5b0c0a3e-6a55-4c1f-a3c1-0d6c2f3a9e10", 12)
		StepSpanID("5b0c0a3e-6a55-4c1f-a3c1-0d6c2f3a9e10", 12, 3)
		ToolSpanID("5b0c0a3e-6a55-4c1f-a3c1-0d6c2f3a9e10", 12, 3, "call_1", "")
	})
	assert.Zero(t, allocs)
}
