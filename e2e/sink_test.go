//go:build e2e

package e2e

import (
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// otlpSink is the tests' OTLP backend: an in-process OTLP/HTTP receiver of
// traces, metrics and logs (protobuf, plain or gzip, as the collector's
// otlp_http exporter sends them) on a loopback port of its own, which a
// collector exports to through SINK_ENDPOINT (collector.toSink). It counts
// every log record, and every session row by its key — "session/seq" from
// the record's session.id and event.seq, "session/header" for a record
// without a seq — and keeps what it received (a counting sink keeps no log records: a fleet's run
// sends hundreds of thousands). While held, it stalls every request.
type otlpSink struct {
	addr string // host:port
	keep bool   // keep the log records, not only count them

	mu      sync.Mutex
	logs    plog.Logs
	traces  ptrace.Traces
	metrics pmetric.Metrics
	rows    map[string]int
	records int
	gate    chan struct{} // non-nil while held
	stalled int
}

// startSink serves a sink that keeps everything it receives until the test
// ends.
func startSink(t *testing.T) *otlpSink { return serveSink(t, true) }

// startCountingSink serves a sink that counts the log rows it receives and
// keeps no log record.
func startCountingSink(t *testing.T) *otlpSink { return serveSink(t, false) }

func serveSink(t *testing.T, keep bool) *otlpSink {
	t.Helper()
	s := &otlpSink{keep: keep, logs: plog.NewLogs(), traces: ptrace.NewTraces(), metrics: pmetric.NewMetrics(), rows: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() {
		s.release()
		srv.Close()
	})
	return s
}

// hold makes every request wait (at most 20s) until release.
func (s *otlpSink) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate == nil {
		s.gate = make(chan struct{})
	}
}

// release lets held requests through, and every one after them.
func (s *otlpSink) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	gate := s.gate
	if gate != nil {
		s.stalled++
	}
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(20 * time.Second):
		}
	}
	body := r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var resp []byte
	switch r.URL.Path {
	case "/v1/logs":
		req := plogotlp.NewExportRequest()
		if err = req.UnmarshalProto(b); err == nil {
			s.addLogs(req.Logs())
			resp, err = plogotlp.NewExportResponse().MarshalProto()
		}
	case "/v1/traces":
		req := ptraceotlp.NewExportRequest()
		if err = req.UnmarshalProto(b); err == nil {
			s.mu.Lock()
			req.Traces().ResourceSpans().MoveAndAppendTo(s.traces.ResourceSpans())
			s.mu.Unlock()
			resp, err = ptraceotlp.NewExportResponse().MarshalProto()
		}
	case "/v1/metrics":
		req := pmetricotlp.NewExportRequest()
		if err = req.UnmarshalProto(b); err == nil {
			s.mu.Lock()
			req.Metrics().ResourceMetrics().MoveAndAppendTo(s.metrics.ResourceMetrics())
			s.mu.Unlock()
			resp, err = pmetricotlp.NewExportResponse().MarshalProto()
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(resp)
}

// addLogs counts the rows of a request and keeps its records.
func (s *otlpSink) addLogs(ld plog.Logs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				s.records++
				sid, ok := lr.Attributes().Get("session.id")
				if !ok {
					continue // not a session row
				}
				key := sid.AsString() + "/header"
				if seq, ok := lr.Attributes().Get("event.seq"); ok {
					key = sid.AsString() + "/" + seq.AsString()
				}
				s.rows[key]++
			}
		}
	}
	if s.keep {
		ld.ResourceLogs().MoveAndAppendTo(s.logs.ResourceLogs())
	}
}

// recordCount is how many log records arrived, repeats included.
func (s *otlpSink) recordCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records
}

// rowCounts is how many times each row arrived.
func (s *otlpSink) rowCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.rows))
	for k, n := range s.rows {
		out[k] = n
	}
	return out
}

// stalledRequests is how many requests arrived while the sink was held.
func (s *otlpSink) stalledRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// receivedLogs is a copy of the log records kept.
func (s *otlpSink) receivedLogs() plog.Logs {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := plog.NewLogs()
	s.logs.CopyTo(out)
	return out
}

// receivedTraces is a copy of the spans received.
func (s *otlpSink) receivedTraces() ptrace.Traces {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := ptrace.NewTraces()
	s.traces.CopyTo(out)
	return out
}

// receivedMetrics is a copy of the metrics received.
func (s *otlpSink) receivedMetrics() pmetric.Metrics {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := pmetric.NewMetrics()
	s.metrics.CopyTo(out)
	return out
}
