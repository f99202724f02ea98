package httpsource

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// repoTestdata is the repository's shared testdata (dialects, hostile).
var repoTestdata = filepath.Join("..", "..", "..", "..", "testdata")

func zstdBody(t testing.TB, b []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	require.NoError(t, err)
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func gzipBody(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, err := w.Write(b)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// startSource starts an HTTP source on a free loopback port, delivering
// to next; it is shut down when the test ends.
func startSource(t *testing.T, next consumer.Logs, adjust func(*Source)) *Source {
	t.Helper()
	cfg := NewDefaultConfig()
	cfg.ServerConfig.NetAddr.Endpoint = "127.0.0.1:0"
	set := receivertest.NewNopSettings(metadata.Type)
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID: set.ID, Transport: metadata.TransportHTTP, ReceiverCreateSettings: set,
	})
	require.NoError(t, err)
	tel, err := metadata.NewTelemetry(componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	s := New(cfg, 4<<20, turnmodel.DefaultBounds(), set, next, obs, tel.ForTransport(metadata.TransportHTTP))
	if adjust != nil {
		adjust(s)
	}
	require.NoError(t, s.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.Shutdown(context.Background())) })
	return s
}

// client is an HTTP client without keep-alive, so no connection outlives a
// test (goleak).
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}

// post sends body to a session's endpoint and returns the status and the
// reply.
func post(t *testing.T, s *Source, session string, body []byte) (int, string) {
	t.Helper()
	res, err := client.Post("http://"+s.Addr().String()+"/v1/sessions/"+session+"/events", "application/x-ndjson", bytes.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}
