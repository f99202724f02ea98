package filesource

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// TestPlainLongRows: plain files are read a chunk (plainChunk) at a time
// and rows are views into their chunk. Rows cut by a chunk's end, rows
// longer than a chunk, a row over max_line_bytes (skipped) and the same
// torn over two polls all come out byte for byte, each once, in order.
func TestPlainLongRows(t *testing.T) {
	const maxLine = 3 * plainChunk
	var want, file []string
	file = append(file, header)
	want = append(want, file...)
	seq := 0
	add := func(n int) {
		r := todoRow(seq, n)
		seq++
		file = append(file, r)
		if len(r) <= maxLine {
			want = append(want, r)
		}
	}
	for range 300 { // ends of rows on both sides of the first chunk's end
		add(1000 + seq*7)
	}
	add(plainChunk + 1000)   // longer than a chunk
	add(2*plainChunk + 5000) // longer than two
	add(maxLine + 1)         // over max_line_bytes: skipped
	for range 50 {
		add(300)
	}
	root := t.TempDir()
	path := sessionPath(root, "long", "session.v4.jsonl")
	whole := lines(file)
	writeFile(t, path, whole)
	sink := new(consumertest.LogsSink)
	startSource(t, root, maxLine, sink)
	settle(t, sink, len(want))

	// Torn over two polls: a row over the limit, then one longer than a
	// chunk, each written half now and half later.
	over, long := todoRow(seq, maxLine+10), todoRow(seq+1, plainChunk+77)
	tail := todoRow(seq+2, 10)
	appendFile(t, path, []byte(over[:maxLine/2]))
	time.Sleep(3 * pollInterval)
	appendFile(t, path, []byte(over[maxLine/2:]+"\n"+long[:plainChunk/2]))
	time.Sleep(3 * pollInterval)
	appendFile(t, path, []byte(long[plainChunk/2:]+"\n"+tail+"\n"))
	want = append(want, long, tail)
	settle(t, sink, len(want))
	got := bodies(sink.AllLogs())
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, len(want[i]), len(got[i]), "row %d", i)
		require.Equal(t, want[i], got[i], "row %d", i)
	}
}
