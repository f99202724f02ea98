package sessionevent

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/plogtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// corpusFile is one real dsh log with what the receiver must make of it.
type corpusFile struct {
	rel     string
	raw     []byte
	wrapped bool // wire streams: SDK notifications, stream-json lines
	// rows are the rows that become records (header, event and packed
	// rows), in file order; version the header's version (-1: none).
	rows    []string
	version int
}

func loadCorpus(t *testing.T) []corpusFile {
	t.Helper()
	var out []corpusFile
	for _, l := range testcorpus.Logs(t) {
		rel := l.Name
		raw, err := os.ReadFile(l.Path)
		require.NoError(t, err)
		cf := corpusFile{rel: rel, raw: raw, version: -1}
		dec, err := sessionlog.NewDecoder(bytes.NewReader(raw), sessionlog.Options{DecodeUnterminated: true})
		require.NoError(t, err)
		for {
			row, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, rel)
			if row.Wrapper != sessionlog.WrapNone {
				cf.wrapped = true
			}
			switch row.Kind {
			case sessionlog.RowHeader:
				cf.version = row.Header.Version
				fallthrough
			case sessionlog.RowEvent, sessionlog.RowPacked:
				cf.rows = append(cf.rows, string(row.Bytes))
			}
		}
		dec.Close()
		require.NotEmpty(t, cf.rows, rel)
		out = append(out, cf)
	}
	return out
}

// reference builds the records of a file the way docs/design.md §3 defines them,
// straight through logrecord.Tracker: what the receiver must deliver.
func reference(t *testing.T, cf corpusFile, session string) plog.Logs {
	t.Helper()
	dec, err := sessionlog.NewDecoder(bytes.NewReader(cf.raw), sessionlog.Options{DecodeUnterminated: true})
	require.NoError(t, err)
	defer dec.Close()
	var rows []*sessionlog.Row
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		rows = append(rows, row)
	}
	ld := plog.NewLogs()
	lrs := logrecord.NewResourceLogs(ld, "github.com/dshtrace/dshtrace/receiver/sessionevent", session, nil)
	tr := logrecord.NewTracker(turnmodel.DefaultBounds())
	for _, row := range rows {
		tr.Append(lrs, session, row, dec.Format(), time.Time{})
	}
	return ld
}

// TestCorpusHTTP posts every real log of the corpus — plain, gzip, zstd by
// Content-Encoding and as a raw .jsonl.zstd body — and checks that each
// record's Body is byte-equal to its row, every row once; session files
// give exactly the records of docs/design.md §3 (compared with logrecord.Tracker's,
// trace and span ids included); posted again, everything is a duplicate
// (the last two checked once, on the plain posts).
func TestCorpusHTTP(t *testing.T) {
	corpus := loadCorpus(t)
	encodings := []struct {
		name    string
		encode  func([]byte) []byte
		headers []string
	}{
		{"plain", func(b []byte) []byte { return b }, []string{"Content-Type", "application/x-ndjson"}},
		{"gzip", gzipBytes, []string{"Content-Encoding", "gzip"}},
		{"zstd", func(b []byte) []byte { return zstdFile(t, b, 7) }, []string{"Content-Encoding", "zstd"}},
		{"raw-zstd", func(b []byte) []byte { return zstdFile(t, b, 5) }, []string{"Content-Type", "application/zstd"}},
	}
	for _, enc := range encodings {
		t.Run(enc.name, func(t *testing.T) {
			sink := new(consumertest.LogsSink)
			s := start(t, httpOnlyConfig(), sink, nil)
			for i, cf := range corpus {
				s, sink := s, sink
				url := s.url + "/v1/session-events"
				if cf.wrapped {
					// The corpus's wire streams share their placeholder
					// session id ({{sessionId}}): each gets a receiver of its own.
					sink = new(consumertest.LogsSink)
					s = start(t, httpOnlyConfig(), sink, nil)
					url = s.url + "/v1/session-events"
				}
				before := len(sink.AllLogs())
				session := ""
				if !cf.wrapped {
					session = fmt.Sprintf("corpus-%03d", i)
					url = sessionURL(s, session)
				}
				body := enc.encode(cf.raw)
				res := post(t, url, body, enc.headers...)
				require.Equal(t, http.StatusAccepted, res.status, "%s: %v", cf.rel, res.body)
				require.Equal(t, len(cf.rows), res.int("accepted"), cf.rel)
				got := sink.AllLogs()[before:]
				if cf.wrapped {
					assert.Equal(t, sorted(cf.rows), sorted(bodies(got)), cf.rel)
				} else {
					require.Len(t, got, 1, cf.rel)
					assert.Equal(t, cf.rows, bodies(got), cf.rel)
					if cf.version >= 0 && enc.name == "plain" { // a header fixes the format from the first row on
						err := plogtest.CompareLogs(reference(t, cf, session), got[0], plogtest.IgnoreObservedTimestamp())
						assert.NoError(t, err, cf.rel)
					}
				}
				if enc.name != "plain" {
					continue
				}
				res = post(t, url, body, enc.headers...)
				require.Equal(t, http.StatusAccepted, res.status, cf.rel)
				assert.Equal(t, 0, res.int("accepted"), cf.rel)
				assert.Equal(t, len(cf.rows), res.int("duplicates"), cf.rel)
			}
		})
	}
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// TestCorpusFiles lays every real log out as dsh does —
// <root>/--project--/<escaped-id>/session[.vN].jsonl[.zstd], every other
// one compressed — and tails the root: every row once, each record's Body
// byte-equal to its row, session files with exactly the records of
// docs/design.md §3.
func TestCorpusFiles(t *testing.T) {
	corpus := loadCorpus(t)
	root := t.TempDir()
	var want []string
	for i, cf := range corpus {
		name := "session.jsonl"
		if cf.version > 0 {
			name = fmt.Sprintf("session.v%d.jsonl", cf.version)
		}
		b := cf.raw
		if i%2 == 1 {
			name += ".zstd"
			b = zstdFile(t, b, 4)
		}
		writeFile(t, sessionPath(root, fmt.Sprintf("corpus~0020%03d", i), name), b)
		want = append(want, cf.rows...)
	}
	sink := new(consumertest.LogsSink)
	start(t, filesOnlyConfig(pattern(root), nil), sink, nil)
	settle(t, sink, len(want))
	assert.Equal(t, sorted(want), sorted(bodies(sink.AllLogs())))

	// Resources are {session.id} only: the header's id, the wrappers' ids,
	// or the directory's unescaped name for the header-less file.
	for _, r := range records(sink.AllLogs()) {
		assert.Equal(t, 1, r.res.Resource().Attributes().Len())
	}
	// Each file came in one delivery: a session file's equals the records
	// logrecord.Tracker makes of it, ids included.
	byRows := map[string]corpusFile{}
	for _, cf := range corpus {
		byRows[fmt.Sprint(cf.rows)] = cf
	}
	compared := 0
	for _, ld := range sink.AllLogs() {
		cf, ok := byRows[fmt.Sprint(bodies([]plog.Logs{ld}))]
		if !ok || cf.version < 0 {
			continue
		}
		id, _ := ld.ResourceLogs().At(0).Resource().Attributes().Get("session.id")
		assert.NoError(t, plogtest.CompareLogs(reference(t, cf, id.Str()), ld, plogtest.IgnoreObservedTimestamp()), cf.rel)
		compared++
	}
	assert.Greater(t, compared, len(corpus)/2)
}
