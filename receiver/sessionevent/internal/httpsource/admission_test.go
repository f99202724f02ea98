package httpsource

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// rowsOf is n small valid rows of one session, seq 1 upwards, about 64
// bytes each: the most rows, so the most decoded memory, per byte.
func rowsOf(n int) []byte {
	var b bytes.Buffer
	for seq := 1; seq <= n; seq++ {
		fmt.Fprintf(&b, `{"type":"todo/write","seq":%d,"time":1,"data":{"todos":[]}}`+"\n", seq)
	}
	return b.Bytes()
}

// send posts body to a session with the given headers and returns the
// response's status, Retry-After and body.
func send(t *testing.T, s *Source, session string, body io.Reader, size int64, headers ...string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+s.Addr().String()+"/v1/sessions/"+session+"/events", body)
	require.NoError(t, err)
	req.ContentLength = size
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Retry-After"), string(b)
}

// TestAdmissionRefusesOverBound: while one request's body read so far
// holds most of max_bytes_in_flight, another that would pass it is
// answered 503 with Retry-After, naming the key; once the first is
// answered the second is accepted, and nothing is held any more. What a
// request declares in Content-Length and has not sent holds nothing.
func TestAdmissionRefusesOverBound(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := startSource(t, sink, func(s *Source) { s.cfg.MaxBytesInFlight = 1 << 20 })
	slow := rowsOf(11000) // about 700 KiB
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		status, _, _ := send(t, s, "slow", pr, int64(len(slow)), "Content-Type", "application/x-ndjson")
		done <- status
	}()
	_, err := pw.Write(slow[:100])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.admission.inUse.Load() > 0 }, 5*time.Second, time.Millisecond)
	assert.Less(t, s.admission.inUse.Load(), int64(len(slow)), "a declared, unsent body holds nothing")

	split := len(slow) - 100
	_, err = pw.Write(slow[100:split])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.admission.inUse.Load() >= int64(split-admissionStep) }, 5*time.Second, time.Millisecond)
	other := rowsOf(6000) // about 380 KiB
	status, retry, body := send(t, s, "other", bytes.NewReader(other), int64(len(other)), "Content-Type", "application/x-ndjson")
	assert.Equal(t, http.StatusServiceUnavailable, status, body)
	assert.Equal(t, "1", retry)
	assert.Contains(t, body, "max_bytes_in_flight")

	_, err = pw.Write(slow[split:])
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	assert.Equal(t, http.StatusAccepted, <-done)
	status, _, body = send(t, s, "other", bytes.NewReader(other), int64(len(other)), "Content-Type", "application/x-ndjson")
	assert.Equal(t, http.StatusAccepted, status, body)
	assert.Zero(t, s.admission.inUse.Load(), "every request gave its share back")
	assert.Equal(t, 17000, sink.LogRecordCount())
}

// TestAdmissionCountsDecompressedBytes: a small compressed body takes what
// it expands to, and its zstd decoder's window, as it is read — with
// Content-Encoding or recognized by its magic bytes — and is refused
// (503) once that passes the bound, before it reaches
// max_request_body_size; its share is given back.
func TestAdmissionCountsDecompressedBytes(t *testing.T) {
	s := startSource(t, consumertest.NewNop(), func(s *Source) { s.cfg.MaxBytesInFlight = 2 << 20 })
	bomb := rowsOf(60000) // about 4 MiB of rows
	for _, c := range []struct {
		name    string
		body    []byte
		headers []string
	}{
		{"zstd", zstdBody(t, bomb), []string{"Content-Encoding", "zstd"}},
		{"zstd, no Content-Encoding", zstdBody(t, bomb), nil},
		{"gzip", gzipBody(t, bomb), []string{"Content-Encoding", "gzip"}},
		{"gzip, no Content-Encoding", gzipBody(t, bomb), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Less(t, len(c.body), 1<<20)
			status, retry, body := send(t, s, "bomb", bytes.NewReader(c.body), int64(len(c.body)), c.headers...)
			assert.Equal(t, http.StatusServiceUnavailable, status, body)
			assert.Equal(t, "1", retry)
			assert.Contains(t, body, "max_bytes_in_flight")
			assert.Zero(t, s.admission.inUse.Load())
		})
	}
}

// TestZstdContentEncodingDecodedByReceiver: the receiver decodes
// Content-Encoding: zstd itself (its decoder's memory counted); a body
// that is no zstd frame is refused as undecodable, as confighttp would.
func TestZstdContentEncodingDecodedByReceiver(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := startSource(t, sink, nil)
	rows := rowsOf(3)
	status, _, body := send(t, s, "z", bytes.NewReader(zstdBody(t, rows)), -1, "Content-Encoding", "zstd")
	require.Equal(t, http.StatusAccepted, status, body)
	assert.JSONEq(t, `{"accepted":3,"duplicates":0}`, body)
	status, _, body = send(t, s, "z", bytes.NewReader(rows), -1, "Content-Encoding", "zstd")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "does not start with a zstd frame")
}

// TestZstdDecoderBytes: a frame takes its declared window (a
// single-segment frame its content size), never more than the bound the
// decoder is made with, and room for two blocks.
func TestZstdDecoderBytes(t *testing.T) {
	const blocks = 2 * (128<<10 + 32)
	small := zstdBody(t, rowsOf(10)) // single segment: its content size
	assert.Less(t, zstdDecoderBytes(small, 20<<20), int64(4<<10))
	assert.EqualValues(t, 20<<20+blocks, zstdDecoderBytes(nil, 20<<20), "no header: the bound")
	big := zstdBody(t, rowsOf(200000)) // about 13 MiB of content
	assert.EqualValues(t, 8<<20+blocks, zstdDecoderBytes(big, 8<<20), "bounded by the decoder's largest window")
}

// TestMemoryPerDecodedByte measures the live heap a request holds while
// it is judged, per decompressed byte, for the smallest valid rows (the
// most decoded rows per byte): the figure docs/operating.md multiplies
// max_bytes_in_flight by. It fails when the ratio passes 8.
func TestMemoryPerDecodedByte(t *testing.T) {
	body := rowsOf(100000)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	pb, rerr := parseBody(bytes.NewReader(body), parseOptions{endpoint: endpointSession, session: "s", maxLine: 4 << 20, maxBody: 20 << 20})
	require.Nil(t, rerr)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	ratio := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(len(body))
	pb.release()
	t.Logf("%d rows, %d bytes: %.1f bytes of live heap per decompressed byte", 100000, len(body), ratio)
	assert.Less(t, ratio, 8.0)
}
