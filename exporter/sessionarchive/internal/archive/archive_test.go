package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// counts is an Observer that keeps the counts.
type counts struct {
	rows, bytes, files, dups int64
	giveUps, skipped         map[string]int64
	dropped                  map[string]int64
}

func newCounts() *counts {
	return &counts{giveUps: map[string]int64{}, skipped: map[string]int64{}, dropped: map[string]int64{}}
}

func (c *counts) Written(rows, bytes int64) { c.rows += rows; c.bytes += bytes }
func (c *counts) FileCreated()              { c.files++ }
func (c *counts) Duplicates(n int64)        { c.dups += n }
func (c *counts) GaveUp(cause string, skipped int64) {
	c.giveUps[cause]++
	c.skipped[cause] += skipped
}
func (c *counts) Dropped(reason string, n int64) { c.dropped[reason] += n }

func newArchive(t *testing.T, opts Options) (*Archive, *counts) {
	t.Helper()
	if opts.Root == "" {
		opts.Root = t.TempDir()
	}
	c := newCounts()
	opts.Observer = c
	a, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close(t0) })
	return a, c
}

// row builds the Row of one line as the exporter does. version < 0: the
// record carries no format version.
func row(t *testing.T, session, line string, version int, live bool) Row {
	t.Helper()
	r, err := sessionlog.NewRowDecoder(0, 0).Decode([]byte(line), 1)
	require.NoError(t, err)
	out := Row{Session: session, Live: live, Version: version, HasVersion: version >= 0}
	switch r.Kind {
	case sessionlog.RowHeader:
		out.Header, out.Version, out.Cwd = true, r.Header.Version, r.Header.Cwd
		out.Lines = [][]byte{r.Bytes}
		return out
	case sessionlog.RowEvent, sessionlog.RowPacked:
	default:
		t.Fatalf("line is no row: %s", line)
	}
	out.First, out.Last = r.Events[0].Seq, r.Events[len(r.Events)-1].Seq
	out.Packed = r.Kind == sessionlog.RowPacked
	if r.Wrapper == sessionlog.WrapNone {
		out.Lines = [][]byte{r.Bytes}
	} else {
		for i := range r.Events {
			out.Lines = append(out.Lines, r.Events[i].LogicalJSON())
		}
	}
	return out
}

func header(id, cwd string, version int) string {
	h := fmt.Sprintf(`{"type":"session","version":%d,"id":%q,"createdAt":1`, version, id)
	if cwd != "" {
		h += fmt.Sprintf(`,"cwd":%q`, cwd)
	}
	if version >= 2 {
		h += `,"isSeeded":false`
	}
	return h + `,"delegationDepth":0}`
}

func ev(seq int64, typ, data string) string {
	return fmt.Sprintf(`{"type":%q,"seq":%d,"time":%d,"data":%s}`, typ, seq, 100+seq, data)
}

func chunk(seq int64, text string) string {
	return ev(seq, "assistant/chunk", fmt.Sprintf(`{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":%q}}`, text))
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func join(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func check(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, err := sessionlog.Check(f, sessionlog.Options{})
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Nil(t, rep.Tail)
}

// A step of v0 chunks delivered once packed and once loose, in either
// order, is written once: what a later row adds beyond the written seqs
// is written as the assistant/chunk events its members stand for.
func TestPackedAndLooseOverlap(t *testing.T) {
	packed := `{"type":"text-chunks","seq0":3,"time0":103,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a","b","c"]}}`
	prefix := []string{
		header("p", "/w", 0),
		ev(0, "turn/start", `{"turn":1}`),
		ev(1, "step/start", `{"turn":1,"step":1}`),
		ev(2, "assistant/chunk", `{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}`),
	}
	after := ev(6, "assistant/chunk", `{"turn":1,"step":1,"chunk":{"type":"block-end","index":0,"block":{"type":"text","text":"abc"}}}`)
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string
		dups  int64
	}{
		{"packed_then_loose", []string{packed, chunk(3, "a"), chunk(4, "b"), chunk(5, "c"), after}, []string{packed, after}, 3},
		{"loose_then_packed", []string{chunk(3, "a"), packed, after}, []string{chunk(3, "a"), chunk(4, "b"), chunk(5, "c"), after}, 0},
		{"packed_held_behind_loose", []string{after, chunk(4, "b"), packed, chunk(3, "a")}, []string{packed, after}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, c := newArchive(t, Options{})
			var rows []Row
			for _, l := range append(append([]string(nil), prefix...), tc.lines...) {
				rows = append(rows, row(t, "p", l, 0, false))
			}
			for _, r := range rows {
				require.NoError(t, a.Add([]Row{r}, t0))
			}
			path := filepath.Join(a.opts.Root, "--w--", "p", "session.jsonl")
			assert.Equal(t, join(append(append([]string(nil), prefix...), tc.want...)...), read(t, path))
			check(t, path)
			assert.Zero(t, a.Pending())
			assert.Equal(t, tc.dups, c.dups)
		})
	}
}

// A file's rows that arrive before its header wait for it; when no header
// comes in pending_timeout, the session is archived headerless in _no-cwd.
func TestRowsWaitForTheirHeader(t *testing.T) {
	a, c := newArchive(t, Options{PendingTimeout: time.Second})
	h := header("h", "/w", 4)
	rows := []Row{row(t, "h", ev(0, "turn/start", `{"turn":1}`), 4, false), row(t, "h", ev(1, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`), 4, false)}
	require.NoError(t, a.Add(rows, t0))
	assert.Equal(t, 2, a.Pending())
	require.NoError(t, a.Add([]Row{row(t, "h", h, -1, false)}, t0))
	path := filepath.Join(a.opts.Root, "--w--", "h", "session.v4.jsonl")
	assert.Equal(t, join(h, string(rows[0].Lines[0]), string(rows[1].Lines[0])), read(t, path))

	// No header at all: after the timeout, a headerless file.
	require.NoError(t, a.Add([]Row{row(t, "n", ev(0, "turn/start", `{"turn":1}`), 3, false)}, t0))
	require.NoError(t, a.Sweep(t0.Add(999*time.Millisecond)))
	assert.Equal(t, 1, a.Pending())
	require.NoError(t, a.Sweep(t0.Add(time.Second)))
	assert.Equal(t, 0, a.Pending())
	npath := filepath.Join(a.opts.Root, sessionroot.NoCwdDir, "n", "session.v3.jsonl")
	assert.Equal(t, join(ev(0, "turn/start", `{"turn":1}`)), read(t, npath))
	assert.EqualValues(t, 1, c.giveUps[CauseTimeout])
	assert.EqualValues(t, 0, c.skipped[CauseTimeout])

	// A header arriving now cannot be the first line any more.
	require.NoError(t, a.Add([]Row{row(t, "n", header("n", "", 3), -1, false)}, t0))
	assert.EqualValues(t, 1, c.dropped[DropHeaderLate])
	// Later rows continue the headerless file.
	require.NoError(t, a.Add([]Row{row(t, "n", ev(1, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`), 3, false)}, t0))
	assert.Equal(t, join(ev(0, "turn/start", `{"turn":1}`), ev(1, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)), read(t, npath))
	check(t, npath)
}

// A live stream of a session whose file generation is archived already is
// the same log (session, version, seq): it joins that file, and its rows
// that the file has are duplicates.
func TestLiveStreamJoinsTheFileGeneration(t *testing.T) {
	a, c := newArchive(t, Options{})
	h := header("j", "/w", 0)
	e0, e1 := ev(0, "turn/start", `{"turn":1}`), ev(1, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)
	require.NoError(t, a.Add([]Row{row(t, "j", h, -1, false), row(t, "j", e0, 0, false)}, t0))
	wrap := func(e string) string {
		return `{"method":"session.event","params":{"sessionId":"j","event":` + e + `}}`
	}
	require.NoError(t, a.Add([]Row{row(t, "j", wrap(e0), -1, true), row(t, "j", wrap(e1), 0, true)}, t0))
	path := filepath.Join(a.opts.Root, "--w--", "j", "session.jsonl")
	assert.Equal(t, join(h, e0, e1), read(t, path))
	assert.EqualValues(t, 1, c.dups)
	assert.EqualValues(t, 1, c.files)
}

// A stream joined late (first seq > 0) is held until the wait times out,
// then archived from its first seq, the missing ones counted.
func TestLateJoinedStream(t *testing.T) {
	a, c := newArchive(t, Options{PendingTimeout: time.Second})
	wrap := func(e string) string { return `{"type":"session_event","sessionId":"l","event":` + e + `}` }
	e3, e4 := ev(3, "turn/start", `{"turn":1}`), ev(4, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)
	require.NoError(t, a.Add([]Row{row(t, "l", wrap(e3), -1, true), row(t, "l", wrap(e4), -1, true)}, t0))
	assert.NoFileExists(t, filepath.Join(a.opts.Root, sessionroot.NoCwdDir, "l", "session.jsonl"))
	require.NoError(t, a.Sweep(t0.Add(time.Second)))
	path := filepath.Join(a.opts.Root, sessionroot.NoCwdDir, "l", "session.jsonl")
	assert.Equal(t, join(e3, e4), read(t, path))
	assert.EqualValues(t, 3, c.skipped[CauseTimeout])
	check(t, path)
}

// State lives in the files: with one open file and one session in
// memory, sessions written alternately still come out whole and in order.
func TestBoundedFilesAndSessions(t *testing.T) {
	for _, fsync := range []Fsync{FsyncNone, FsyncBatch, FsyncAlways} {
		for _, comp := range []Compression{CompressionNone, CompressionZstd} {
			t.Run(fmt.Sprintf("fsync%d_zstd%d", fsync, comp), func(t *testing.T) {
				root := t.TempDir()
				a, c := newArchive(t, Options{Root: root, MaxOpenFiles: 1, MaxSessions: 1, Fsync: fsync, Compression: comp})
				want := map[string][]string{}
				for _, id := range []string{"a", "b", "c"} {
					h := header(id, "/w", 2)
					want[id] = []string{h}
					require.NoError(t, a.Add([]Row{row(t, id, h, -1, false)}, t0))
				}
				for seq := int64(0); seq < 6; seq++ {
					for _, id := range []string{"a", "b", "c"} {
						e := ev(seq, "session/title", `{"title":"t"}`)
						want[id] = append(want[id], e)
						require.NoError(t, a.Add([]Row{row(t, id, e, 2, false), row(t, id, e, 2, false)}, t0))
					}
				}
				assert.LessOrEqual(t, a.files.Len(), 1)
				assert.Equal(t, 1, a.Sessions())
				require.NoError(t, a.Close(t0))
				for id, lines := range want {
					p := filepath.Join(root, "--w--", id, sessionroot.FileName(2, comp == CompressionZstd))
					got := read(t, p)
					if comp == CompressionZstd {
						got = decompress(t, []byte(got))
					}
					assert.Equal(t, join(lines...), got, id)
					check(t, p)
				}
				assert.EqualValues(t, 18, c.dups)
				assert.EqualValues(t, 3, c.files)
			})
		}
	}
}

// Two archives on one root in turn: the second resumes from the files.
func TestResumeFromDisk(t *testing.T) {
	root := t.TempDir()
	h := header("r", "", 0)
	e := func(seq int64) string { return ev(seq, "session/title", `{"title":"t"}`) }
	a1, _ := newArchive(t, Options{Root: root})
	require.NoError(t, a1.Add([]Row{row(t, "r", h, -1, false), row(t, "r", e(0), 0, false), row(t, "r", e(1), 0, false)}, t0))
	require.NoError(t, a1.Close(t0))
	a2, c := newArchive(t, Options{Root: root})
	require.NoError(t, a2.Add([]Row{row(t, "r", h, -1, false), row(t, "r", e(1), 0, false), row(t, "r", e(2), 0, false)}, t0))
	assert.Equal(t, join(h, e(0), e(1), e(2)), read(t, filepath.Join(root, sessionroot.NoCwdDir, "r", "session.jsonl")))
	assert.EqualValues(t, 2, c.dups)
	assert.EqualValues(t, 0, c.files)
}

// A session whose directory cannot be made drops its rows, counted, and
// does not fail the batch (retrying could never succeed).
func TestUnwritablePathIsDropped(t *testing.T) {
	a, c := newArchive(t, Options{})
	id := strings.Repeat("x", 300) // longer than a file name may be
	require.NoError(t, a.Add([]Row{row(t, id, header(id, "", 0), -1, false), row(t, id, ev(0, "turn/start", `{"turn":1}`), 0, false)}, t0))
	assert.EqualValues(t, 2, c.dropped[DropPath])
	assert.Zero(t, a.Pending())
}

// A failed write (here: a full disk) fails Add and loses nothing: the rows
// stay held, and the next Add, once the disk has room, writes each once.
func TestFailedWriteIsRetried(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	root := t.TempDir()
	a, c := newArchive(t, Options{Root: root})
	dir := filepath.Join(root, "--w--", "f")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	path := filepath.Join(dir, "session.jsonl")
	require.NoError(t, os.Symlink("/dev/full", path))
	h, e0, e1 := header("f", "/w", 0), ev(0, "turn/start", `{"turn":1}`), ev(1, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)
	err := a.Add([]Row{row(t, "f", h, -1, false), row(t, "f", e0, 0, false)}, t0)
	require.Error(t, err)
	assert.Equal(t, 1, a.Pending())
	// Room again: the link now points to a real file.
	real := filepath.Join(root, "real.jsonl")
	require.NoError(t, os.WriteFile(real, nil, 0o600))
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink(real, path))
	require.NoError(t, a.Add([]Row{row(t, "f", h, -1, false), row(t, "f", e0, 0, false), row(t, "f", e1, 0, false)}, t0))
	assert.Equal(t, join(h, e0, e1), read(t, real))
	assert.Zero(t, a.Pending())
	assert.EqualValues(t, 2, c.dups) // the header and seq 0, sent again
}
