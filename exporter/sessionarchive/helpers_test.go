package sessionarchive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

var observed = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// record is one log record the receiver would emit, with its session.
type record struct {
	session string
	lr      plog.LogRecord
}

// corpusRecords turns a log file into records the way the receiver does
// (logrecord.Tracker over the decoded rows): files name their session in
// the header, wrapped lines per line, anything else is fallback.
func corpusRecords(t testing.TB, path, fallback string) []record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
	require.NoError(t, err)
	defer dec.Close()
	tr := logrecord.NewTracker(turnmodel.DefaultBounds())
	var out []record
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		id := row.SessionID
		if row.Wrapper == sessionlog.WrapNone {
			id = fallback
			if h := dec.Header(); h != nil && h.ID != "" {
				id = h.ID
			}
		}
		lrs := plog.NewLogRecordSlice()
		tr.Append(lrs, id, row, dec.Format(), observed)
		for i := 0; i < lrs.Len(); i++ {
			out = append(out, record{session: id, lr: lrs.At(i)})
		}
	}
}

// logsOf groups records into one plog.Logs, a ResourceLogs per run of one
// session, as the receiver sends them.
func logsOf(recs []record) plog.Logs {
	ld := plog.NewLogs()
	var lrs plog.LogRecordSlice
	last := "\x00none"
	for _, r := range recs {
		if r.session != last {
			lrs = logrecord.NewResourceLogs(ld, "github.com/dshtrace/dshtrace/receiver/sessionevent", r.session, nil)
			last = r.session
		}
		r.lr.CopyTo(lrs.AppendEmpty())
	}
	return ld
}

// testConfig is a config for tests: no queue and no retry, so a push's
// result is ConsumeLogs's.
func testConfig(root string) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.Root = root
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	return cfg
}

// newExporter creates and starts an exporter; stop shuts it down.
func newExporter(t testing.TB, cfg *Config) exporter.Logs {
	t.Helper()
	return newExporterWith(t, cfg, exportertest.NewNopSettings(metadata.Type))
}

func newExporterWith(t testing.TB, cfg *Config, set exporter.Settings) exporter.Logs {
	t.Helper()
	exp, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	return exp
}

// deliver sends records in batches of n through a fresh exporter.
func deliver(t testing.TB, cfg *Config, recs []record, n int) {
	t.Helper()
	exp := newExporter(t, cfg)
	for i := 0; i < len(recs); i += n {
		require.NoError(t, exp.ConsumeLogs(context.Background(), logsOf(recs[i:min(i+n, len(recs))])))
	}
	require.NoError(t, exp.Shutdown(context.Background()))
}

// archivePath is where a session's generation must be archived.
func archivePath(t testing.TB, root, cwd, id string, version int, zstd bool) string {
	t.Helper()
	dir, err := sessionroot.SessionDir(root, cwd, id)
	require.NoError(t, err)
	return filepath.Join(dir, sessionroot.FileName(version, zstd))
}

// files lists every regular file under root, relative to it.
func files(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	}))
	return out
}

// decompressed is a file's content as plain JSONL.
func decompressed(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
	require.NoError(t, err)
	defer dec.Close()
	var buf bytes.Buffer
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			require.Nil(t, dec.Tail(), "%s ends in a torn tail", path)
			return buf.Bytes()
		}
		require.NoError(t, err)
		buf.Write(row.Bytes)
		buf.WriteByte('\n')
	}
}

func headerOf(t testing.TB, path string) *sessionlog.Header {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, err := sessionlog.Check(f, sessionlog.Options{})
	require.NoError(t, err)
	return rep.Header
}

func utf16Decode(units []uint16) []rune { return utf16.Decode(units) }
