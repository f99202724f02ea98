package sessionevent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// sessionRoot lays files out as dsh does: <root>/--project--/<escaped-id>/<name>.
func sessionPath(root, escapedID, name string) string {
	return filepath.Join(root, "--home-alice-app--", escapedID, name)
}

func pattern(root string) string { return filepath.Join(root, "**", "session*.jsonl*") }

// v4Session is a small valid v4 session of n todo/write rows after the header.
func v4Rows(id string, from, to int) []string {
	var out []string
	if from == 0 {
		out = append(out, `{"type":"session","version":4,"id":"`+id+`","createdAt":1788000000000,"isSeeded":false,"delegationDepth":0}`)
	}
	for seq := from; seq < to; seq++ {
		out = append(out, `{"type":"todo/write","seq":`+itoa(seq)+`,"time":1788000000001,"data":{"todos":[{"content":"row `+itoa(seq)+`","status":"pending"}]}}`)
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func lines(rows []string) []byte { return []byte(strings.Join(rows, "\n") + "\n") }

// TestFilesPlainAndZstd: plain and zstd generations are read whole, each
// record's Body its row, the resource the header's session id.
func TestFilesPlainAndZstd(t *testing.T) {
	root := t.TempDir()
	plain := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	zplain := readRepoTestdata(t, "dialects/v2-stream.jsonl")
	writeFile(t, sessionPath(root, "a", "session.v4.jsonl"), plain)
	writeFile(t, sessionPath(root, "b", "session.v2.jsonl.zstd"), zstdFile(t, zplain, 2))

	sink := new(consumertest.LogsSink)
	start(t, filesOnlyConfig(pattern(root), nil), sink, nil)
	want := append(nonBlankLines(plain), nonBlankLines(zplain)...)
	settle(t, sink, len(want))
	assert.ElementsMatch(t, want, bodies(sink.AllLogs()))
	ids := map[string]bool{headerID(t, plain): true, headerID(t, zplain): true}
	for _, r := range records(sink.AllLogs()) {
		assert.Equal(t, 1, r.res.Resource().Attributes().Len())
		assert.True(t, ids[r.session], r.session)
	}
}

func headerID(t *testing.T, file []byte) string {
	t.Helper()
	var h struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(nonBlankLines(file)[0]), &h))
	require.NotEmpty(t, h.ID)
	return h.ID
}

// TestFilesGrowAndTornLine: files appearing while running are read from
// their start; a torn last line waits for its newline and is emitted once.
func TestFilesGrowAndTornLine(t *testing.T) {
	for _, z := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "zstd"}[z]
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			sink := new(consumertest.LogsSink)
			start(t, filesOnlyConfig(pattern(root), nil), sink, nil)
			rows := v4Rows("grow", 0, 6)
			path := sessionPath(root, "grow", "session.v4.jsonl")
			if z {
				path += ".zstd"
				full := zstdFile(t, lines(rows), 1)
				// Frames: header, 0, 1, … — write 3 whole frames and half the 4th.
				cut := frameEnds(t, full)
				writeFile(t, path, full[:cut[2]+(cut[3]-cut[2])/2])
				settle(t, sink, 3)
				appendFile(t, path, full[cut[2]+(cut[3]-cut[2])/2:])
			} else {
				torn := lines(rows[:3])
				torn = append(torn, rows[3][:20]...)
				writeFile(t, path, torn)
				settle(t, sink, 3)
				appendFile(t, path, []byte(rows[3][20:]+"\n"+strings.Join(rows[4:], "\n")+"\n"))
			}
			settle(t, sink, len(rows))
			assert.Equal(t, rows, bodies(sink.AllLogs()))
		})
	}
}

// frameEnds are the end offsets of the frames of a zstd file.
func frameEnds(t *testing.T, b []byte) []int64 {
	t.Helper()
	r := strings.NewReader(string(b))
	var ends []int64
	var off int64
	for off < int64(len(b)) {
		n, complete, err := sessionroot.FrameSize(r, off, int64(len(b)))
		require.NoError(t, err)
		require.True(t, complete)
		off += n
		ends = append(ends, off)
	}
	return ends
}

// TestFilesSessionID: the header's id, else the unescaped directory name.
func TestFilesSessionID(t *testing.T) {
	root := t.TempDir()
	headerless := v4Rows("x", 0, 3)[1:]
	writeFile(t, sessionPath(root, "a~002Fb~007Ec", "session.v4.jsonl"), lines(headerless))
	writeFile(t, sessionPath(root, "not-the-id", "session.v4.jsonl"), lines(v4Rows("from header", 0, 2)))
	sink := new(consumertest.LogsSink)
	start(t, filesOnlyConfig(pattern(root), nil), sink, nil)
	settle(t, sink, 3+3)
	ids := map[string]int{}
	for _, r := range records(sink.AllLogs()) {
		ids[r.session]++
	}
	assert.Equal(t, map[string]int{"a/b~c": 3, "from header": 3}, ids)
}

// TestFilesCorruptRow: a corrupt row is skipped (logged, counted) and the
// rest of the file flows, then and later.
func TestFilesCorruptRow(t *testing.T) {
	root := t.TempDir()
	rows := v4Rows("c", 0, 4)
	withBad := append(append(append([]string(nil), rows[:2]...), `{"type":"todo/write","seq":`), rows[2:]...)
	path := sessionPath(root, "c", "session.v4.jsonl")
	writeFile(t, path, lines(withBad))
	sink := new(consumertest.LogsSink)
	start(t, filesOnlyConfig(pattern(root), nil), sink, nil)
	settle(t, sink, len(rows))
	more := v4Rows("c", 4, 6)
	appendFile(t, path, lines(more))
	settle(t, sink, len(rows)+len(more))
	assert.Equal(t, append(rows, more...), bodies(sink.AllLogs()))
}

// TestFilesGenerationSwitch: a higher generation appearing beside the one
// being tailed takes over (its rows are a new key space and all emitted);
// the old file is no longer read.
func TestFilesGenerationSwitch(t *testing.T) {
	root := t.TempDir()
	v0 := []string{
		`{"type":"session","version":0,"id":"g","createdAt":1788000000000,"delegationDepth":0}`,
		`{"type":"todo/write","seq":0,"time":1,"data":{"todos":[]}}`,
	}
	old := sessionPath(root, "g", "session.jsonl")
	writeFile(t, old, lines(v0))
	sink := new(consumertest.LogsSink)
	start(t, filesOnlyConfig(pattern(root), nil), sink, nil)
	settle(t, sink, 2)
	v4 := v4Rows("g", 0, 3)
	writeFile(t, sessionPath(root, "g", "session.v4.jsonl.zstd"), zstdFile(t, lines(v4), 2))
	settle(t, sink, 2+len(v4))
	appendFile(t, old, []byte(`{"type":"todo/write","seq":1,"time":1,"data":{"todos":[]}}`+"\n"))
	settle(t, sink, 2+len(v4))
	assert.Equal(t, append(v0, v4...), bodies(sink.AllLogs()))
}

// TestFilesTruncation: a file shrinking under its checkpoint, or rewritten
// in place, is read again from its start; rows already emitted (by seq)
// are not emitted again, new ones are.
func TestFilesTruncation(t *testing.T) {
	root := t.TempDir()
	rows := v4Rows("t", 0, 8)
	path := sessionPath(root, "t", "session.v4.jsonl")
	writeFile(t, path, lines(rows))
	sink := new(consumertest.LogsSink)
	core, logs := observer.New(zap.InfoLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	startWith(t, filesOnlyConfig(pattern(root), nil), sink, nil, set)
	settle(t, sink, len(rows))
	rereads := func() int {
		return logs.FilterMessageSnippet("truncated or rewritten").Len()
	}

	// Shrunk (crash repair) …
	writeFile(t, path, lines(rows[:4]))
	require.Eventually(t, func() bool { return rereads() == 1 }, 5*time.Second, time.Millisecond)
	// … then grown past the old size: seqs 3..7 again (delivered before,
	// dropped) and 8..11 (new).
	appendFile(t, path, lines(v4Rows("t", 3, 12)))
	settle(t, sink, len(rows)+4)

	// Rewritten in place: the same length, other bytes just before the
	// offset (row 11 changed), and one more row.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b2 := []byte(strings.Replace(string(b), `"row 11"`, `"row YY"`, 1))
	require.NotEqual(t, b, b2)
	require.NoError(t, os.WriteFile(path, append(b2, lines(v4Rows("t", 12, 13))...), 0o644))
	settle(t, sink, len(rows)+4+1)
	assert.Equal(t, 2, rereads())
	want := append(append(append([]string(nil), rows...), v4Rows("t", 8, 12)...), v4Rows("t", 12, 13)...)
	assert.Equal(t, want, bodies(sink.AllLogs()))
}

// TestFilesStartAtEnd: at the very first start, start_at: end skips what
// existing files hold; rows appended later and files appearing later are
// read.
func TestFilesStartAtEnd(t *testing.T) {
	root := t.TempDir()
	rows := v4Rows("e", 0, 6)
	path := sessionPath(root, "e", "session.v4.jsonl")
	writeFile(t, path, lines(rows[:4]))
	zpath := sessionPath(root, "z", "session.v4.jsonl.zstd")
	zrows := v4Rows("z", 0, 3)
	writeFile(t, zpath, zstdFile(t, lines(zrows), 1))
	cfg := filesOnlyConfig(pattern(root), nil)
	cfg.Files.Get().StartAt = filesource.StartAtEnd
	sink := new(consumertest.LogsSink)
	s := start(t, cfg, sink, nil)
	require.Eventually(t, func() bool { return s.r.files.FilesTracked() == 2 }, 5e9, 5e6)
	appendFile(t, path, lines(rows[4:]))
	appendFile(t, zpath, zstdFile(t, lines(v4Rows("z", 3, 4)), 1)[0:])
	fresh := lines(v4Rows("f", 0, 2))
	writeFile(t, sessionPath(root, "f", "session.v4.jsonl"), fresh)
	settle(t, sink, len(rows[4:])+1+len(nonBlankLines(fresh)))
	got := bodies(sink.AllLogs())
	assert.ElementsMatch(t, append(append(rows[4:], v4Rows("z", 3, 4)...), nonBlankLines(fresh)...), got)
}

// failingConsumer refuses the first n deliveries with err, then stores.
type failingConsumer struct {
	sink consumertest.LogsSink
	n    atomic.Int64
	err  error
}

func (c *failingConsumer) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *failingConsumer) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if c.n.Add(-1) >= 0 {
		return c.err
	}
	return c.sink.ConsumeLogs(ctx, ld)
}

// TestFilesRefusals: a retryable refusal is retried — rows delivered once,
// with the ids of an undisturbed run; a permanent one is skipped without
// stalling the file.
func TestFilesRefusals(t *testing.T) {
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	want := nonBlankLines(file)
	reference := new(consumertest.LogsSink)
	{
		root := t.TempDir()
		writeFile(t, sessionPath(root, "r", "session.v4.jsonl"), file)
		s := start(t, filesOnlyConfig(pattern(root), nil), reference, nil)
		settle(t, reference, len(want))
		s.stop()
	}
	t.Run("retryable", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, sessionPath(root, "r", "session.v4.jsonl"), file)
		c := &failingConsumer{err: errors.New("queue full")}
		c.n.Store(2)
		start(t, filesOnlyConfig(pattern(root), nil), c, nil)
		settle(t, &c.sink, len(want))
		assert.Equal(t, want, bodies(c.sink.AllLogs()))
		got, ref := records(c.sink.AllLogs()), records(reference.AllLogs())
		for i := range ref {
			assert.Equal(t, ref[i].lr.SpanID(), got[i].lr.SpanID(), "record %d", i)
		}
	})
	t.Run("permanent", func(t *testing.T) {
		root := t.TempDir()
		path := sessionPath(root, "r", "session.v4.jsonl")
		writeFile(t, path, file)
		c := &failingConsumer{err: consumererror.NewPermanent(errors.New("never"))}
		c.n.Store(1)
		start(t, filesOnlyConfig(pattern(root), nil), c, nil)
		require.Eventually(t, func() bool { return c.n.Load() <= 0 }, 5*time.Second, time.Millisecond)
		more := v4Rows("r", 25, 27)
		appendFile(t, path, lines(more))
		settle(t, &c.sink, len(more))
		assert.Equal(t, more, bodies(c.sink.AllLogs()))
	})
}

// blockingConsumer accepts the first n deliveries, then blocks each one
// until its context ends — a collector killed while rows are in flight.
type blockingConsumer struct {
	sink    consumertest.LogsSink
	n       int
	blocked chan struct{}
}

func (c *blockingConsumer) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (c *blockingConsumer) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if c.n > 0 {
		c.n--
		return c.sink.ConsumeLogs(ctx, ld)
	}
	select {
	case c.blocked <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestFilesRestart: with a file-backed storage, a restart neither loses nor
// repeats a row — after a clean stop, and after a stop while a delivery was
// in flight (not checkpointed, so read again) — and the records after the
// restart carry the ids an uninterrupted run gives them.
func TestFilesRestart(t *testing.T) {
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	all := nonBlankLines(file)
	reference := new(consumertest.LogsSink)
	{
		root := t.TempDir()
		writeFile(t, sessionPath(root, "r", "session.v4.jsonl"), file)
		s := start(t, filesOnlyConfig(pattern(root), nil), reference, nil)
		settle(t, reference, len(all))
		s.stop()
	}
	for _, z := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "zstd"}[z]
		write := func(t *testing.T, path string, ls []string) {
			if z {
				writeFile(t, path, zstdFile(t, lines(ls), 3))
			} else {
				writeFile(t, path, lines(ls))
			}
		}
		path := func(root string) string {
			if z {
				return sessionPath(root, "r", "session.v4.jsonl.zstd")
			}
			return sessionPath(root, "r", "session.v4.jsonl")
		}
		t.Run(name+"/clean", func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			id := storagetest.NewStorageID("fs")
			cfg := filesOnlyConfig(pattern(root), &id)
			write(t, path(root), all[:10])
			sink := new(consumertest.LogsSink)
			s := start(t, cfg, sink, storagetest.NewStorageHost().WithFileBackedStorageExtension("fs", dir))
			settle(t, sink, 10)
			s.stop()
			write(t, path(root), all) // the file grew while the collector was down
			s = start(t, cfg, sink, storagetest.NewStorageHost().WithFileBackedStorageExtension("fs", dir))
			settle(t, sink, len(all))
			assert.Equal(t, all, bodies(sink.AllLogs()))
			got, ref := records(sink.AllLogs()), records(reference.AllLogs())
			for i := range ref {
				assert.Equal(t, ref[i].lr.SpanID(), got[i].lr.SpanID(), "record %d", i)
				assert.Equal(t, ref[i].lr.TraceID(), got[i].lr.TraceID(), "record %d", i)
			}
		})
		t.Run(name+"/in-flight", func(t *testing.T) {
			root, dir := t.TempDir(), t.TempDir()
			id := storagetest.NewStorageID("fs")
			cfg := filesOnlyConfig(pattern(root), &id)
			write(t, path(root), all[:10])
			c := &blockingConsumer{n: 1, blocked: make(chan struct{}, 1)}
			s := start(t, cfg, c, storagetest.NewStorageHost().WithFileBackedStorageExtension("fs", dir))
			settle(t, &c.sink, 10)
			write(t, path(root), all)
			<-c.blocked // the second delivery is in flight…
			s.stop()    // …when the collector goes down
			sink := new(consumertest.LogsSink)
			start(t, cfg, sink, storagetest.NewStorageHost().WithFileBackedStorageExtension("fs", dir))
			settle(t, sink, len(all)-10)
			assert.Equal(t, all, append(bodies(c.sink.AllLogs()), bodies(sink.AllLogs())...))
		})
	}
}
