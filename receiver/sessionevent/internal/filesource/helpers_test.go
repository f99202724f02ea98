package filesource

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// started is a running file source under test.
type started struct {
	*Source
	stopped bool
}

// stop shuts the source down (once; also done when the test ends).
func (s *started) stop(t *testing.T) {
	t.Helper()
	if !s.stopped {
		s.stopped = true
		require.NoError(t, s.Shutdown(context.Background()))
	}
}

// startSource tails the session files under root with a fast poll, rows up
// to maxLine bytes, delivering to sink.
func startSource(t *testing.T, root string, maxLine int, sink *consumertest.LogsSink) *started {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.Include = []string{filepath.Join(root, "**", "session*.jsonl*")}
	cfg.PollInterval = pollInterval
	set := receivertest.NewNopSettings(metadata.Type)
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: metadata.TransportFile, LongLivedCtx: true, ReceiverCreateSettings: set,
	})
	require.NoError(t, err)
	tel, err := metadata.NewTelemetry(componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	s := &started{Source: New(cfg, maxLine, turnmodel.DefaultBounds(), set, sink, obs, tel.ForTransport(metadata.TransportFile))}
	require.NoError(t, s.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { s.stop(t) })
	return s
}

const pollInterval = 10 * time.Millisecond

// sessionPath lays files out as dsh does: <root>/--project--/<escaped-id>/<name>.
func sessionPath(root, escapedID, name string) string {
	return filepath.Join(root, "--home-alice-app--", escapedID, name)
}

// todoRow is a todo/write row of seq whose content is n bytes.
func todoRow(seq, n int) string {
	return `{"type":"todo/write","seq":` + strconv.Itoa(seq) + `,"time":1788000000001,"data":{"todos":[{"content":"` +
		strings.Repeat(string(rune('a'+seq%26)), n) + `","status":"pending"}]}}`
}

const header = `{"type":"session","version":4,"id":"long","createdAt":1788000000000,"isSeeded":false,"delegationDepth":0}`

func lines(rows []string) []byte { return []byte(strings.Join(rows, "\n") + "\n") }

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// settle waits until the sink holds n records, then a few polls more, and
// checks nothing more arrived.
func settle(t *testing.T, sink *consumertest.LogsSink, n int) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return sink.LogRecordCount() >= n }, 10*time.Second, 5*time.Millisecond) {
		require.FailNowf(t, "too few records", "want %d records, have %d", n, sink.LogRecordCount())
	}
	time.Sleep(10 * pollInterval)
	require.Equal(t, n, sink.LogRecordCount(), "records beyond the expected %d", n)
}

// logRecords are the delivered records, in order.
func logRecords(lds []plog.Logs) []plog.LogRecord {
	var out []plog.LogRecord
	for _, ld := range lds {
		for _, rl := range ld.ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					out = append(out, lr)
				}
			}
		}
	}
	return out
}

// bodies are the Body strings of the delivered records, in order.
func bodies(lds []plog.Logs) []string {
	var out []string
	for _, lr := range logRecords(lds) {
		out = append(out, lr.Body().Str())
	}
	return out
}
