package sessionarchive

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// fallbackSession names the session of rows that do not name one.
const fallbackSession = "corpus-session"

// expected is what archiving one corpus file must give: per file under
// the root, its plain content.
type expected map[string][]byte

// expect derives, from the corpus file alone, the archive it must give: a
// file with a header is archived as itself; a live stream (wrapped lines,
// no header) becomes one headerless file per session, holding its logical
// events in seq order, named by the version inferred from them.
func expect(t testing.TB, path string, zstdFiles bool) expected {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	if h := headerOf(t, path); h != nil {
		return expected{relArchivePath(t, h.Cwd, h.ID, h.Version, zstdFiles): raw}
	}
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
	require.NoError(t, err)
	defer dec.Close()
	type stream struct {
		lines   map[int64][]byte
		version int
	}
	streams := map[string]*stream{}
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if len(row.Events) == 0 {
			continue
		}
		id := row.SessionID
		if row.Wrapper == sessionlog.WrapNone {
			id = fallbackSession
		}
		s := streams[id]
		if s == nil {
			s = &stream{lines: map[int64][]byte{}}
			streams[id] = s
		}
		for i := range row.Events {
			s.lines[row.Events[i].Seq] = row.Events[i].LogicalJSON()
		}
		s.version = max(s.version, dec.Format().RulesVersion())
	}
	out := expected{}
	for id, s := range streams {
		var buf bytes.Buffer
		low, high := int64(-1), int64(-1)
		for seq := range s.lines {
			if low < 0 || seq < low {
				low = seq
			}
			high = max(high, seq)
		}
		for seq := low; seq <= high; seq++ {
			require.Contains(t, s.lines, seq, "%s: the stream has a gap at seq %d", path, seq)
			buf.Write(s.lines[seq])
			buf.WriteByte('\n')
		}
		out[relArchivePath(t, "", id, s.version, zstdFiles)] = buf.Bytes()
	}
	return out
}

func relArchivePath(t testing.TB, cwd, id string, version int, zstdFiles bool) string {
	return filepath.Join(sessionroot.ProjectDir(cwd), sessionroot.EscapeSessionID(id), sessionroot.FileName(version, zstdFiles))
}

// plainContent reads an archived file, decompressing a zstd one whole.
func plainContent(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	if !strings.HasSuffix(path, ".zstd") {
		return b
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	require.NoError(t, err)
	defer dec.Close()
	out, err := dec.DecodeAll(b, nil)
	require.NoError(t, err)
	return out
}

// checkArchive compares the archive under root with what is expected.
func checkArchive(t testing.TB, root string, want expected) {
	t.Helper()
	var got []string
	for _, rel := range files(t, root) {
		got = append(got, rel)
	}
	var names []string
	for rel := range want {
		names = append(names, rel)
	}
	require.ElementsMatch(t, names, got, "files under the archive root")
	for rel, content := range want {
		require.Equal(t, string(content), string(plainContent(t, filepath.Join(root, rel))), "content of %s", rel)
	}
}

// replay runs a log file through a fresh engine, as dshtrace spans does,
// with live steps as the turn_state connector emits them.
func replay(t testing.TB, path, session string) ptrace.Traces {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	e := turnengine.New(turnengine.Config{LiveSteps: true})
	require.NoError(t, turnengine.Replay(e, f, sessionlog.Options{}, session, observed))
	return turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", e.Drain())
}

// Every corpus file, delivered as the receiver's records, is archived
// where dsh would keep it: a file with a header byte for byte (plain, or
// zstd decompressing to the same bytes); a live stream as a headerless
// file of its logical events. Each archived file checks with zero
// violations and no torn tail, and replays to the same spans — same ids —
// as the corpus file itself.
func TestCorpusArchive(t *testing.T) {
	logs := testcorpus.Logs(t)
	for _, compression := range []string{CompressionNone, CompressionZstd} {
		for _, l := range logs {
			t.Run(compression+"/"+l.Name, func(t *testing.T) {
				t.Parallel()
				path := l.Path
				root := t.TempDir()
				cfg := testConfig(root)
				cfg.Compression = compression
				deliver(t, cfg, corpusRecords(t, path, fallbackSession), 16)
				want := expect(t, path, compression == CompressionZstd)
				checkArchive(t, root, want)

				var gotTraces []ptrace.Traces
				for archived := range want {
					p := filepath.Join(root, archived)
					f, err := os.Open(p)
					require.NoError(t, err)
					rep, err := sessionlog.Check(f, sessionlog.Options{})
					f.Close()
					require.NoError(t, err)
					assert.Empty(t, rep.Violations, "violations in %s", archived)
					assert.Nil(t, rep.Tail, "torn tail in %s", archived)
					// sessionlog's own decoder (zstd frames and all) gives the rows.
					assert.Equal(t, string(want[archived]), string(decompressed(t, p)))
					id, ok := unescape(filepath.Base(filepath.Dir(archived)))
					require.True(t, ok)
					gotTraces = append(gotTraces, replay(t, p, id))
				}
				wantTraces := replay(t, path, fallbackSession)
				got := ptrace.NewTraces()
				for _, td := range gotTraces {
					td.ResourceSpans().MoveAndAppendTo(got.ResourceSpans())
				}
				require.NoError(t, ptracetest.CompareTraces(wantTraces, got, ptracetest.IgnoreResourceSpansOrder()))
			})
		}
	}
}

// unescape reverses sessionroot.EscapeSessionID, for the tests.
func unescape(name string) (string, bool) {
	var units []uint16
	for i := 0; i < len(name); {
		if name[i] != '~' {
			units = append(units, uint16(name[i]))
			i++
			continue
		}
		if i+5 > len(name) {
			return "", false
		}
		var u uint16
		for _, c := range name[i+1 : i+5] {
			d := strings.IndexRune("0123456789ABCDEF", c)
			if d < 0 {
				return "", false
			}
			u = u<<4 | uint16(d)
		}
		units = append(units, u)
		i += 5
	}
	return string(utf16Decode(units)), true
}
