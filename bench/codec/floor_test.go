//go:build unix

package codec

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/valyala/fastjson"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/bench/pipeline"
)

// The contract floor: the least work any implementation of the pipeline's
// contract can do with the collector's pdata — every row parsed twice by
// the fastest general-purpose parser (once where it is read, once where
// the connector reads the record back, docs/design.md §3), every row's log
// record built with exactly the attributes, ids and body the receiver
// gives it, and every span and data point the connector emits built as a
// copy of the real ones. It leaves out everything else the pipeline does:
// validation, typed decoding, packed-row expansion, following files, the
// turn state machines and working out what the spans and records say.
// BenchmarkFilePipeline is the real pipeline on the same corpus, in the
// same binary; bench/floor.sh runs the two interleaved and prints both
// figures and what is left between them.

// emitted is what one real run of the pipeline emitted over a corpus.
type emitted struct {
	dir   string
	m     pipeline.Manifest
	files []string // the corpus's session files, sorted
	// records are the log records of each session (its directory's
	// name), in the order of its file's rows.
	records  map[string][]plog.LogRecord
	resource map[string]pcommon.Resource
	traces   []ptrace.Traces
	metrics  []pmetric.Metrics
}

var (
	emittedOnce sync.Once
	emittedData *emitted
	emittedErr  error
)

// pipelineCorpus is BENCH_CORPUS: a bench/gen output directory.
func pipelineCorpus(b *testing.B) *emitted {
	b.Helper()
	dir := os.Getenv("BENCH_CORPUS")
	if dir == "" {
		b.Skip("the contract floor needs BENCH_CORPUS, a bench/gen corpus (bench/floor.sh writes one)")
	}
	emittedOnce.Do(func() { emittedData, emittedErr = capture(dir) })
	if emittedErr != nil {
		b.Fatal(emittedErr)
	}
	return emittedData
}

// capture runs the real pipeline once over dir and keeps a copy of
// everything it emits.
func capture(dir string) (*emitted, error) {
	m, err := pipeline.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	e := &emitted{dir: dir, m: m, records: map[string][]plog.LogRecord{}, resource: map[string]pcommon.Resource{}}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			e.files = append(e.files, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(e.files)
	var mu sync.Mutex
	err = pipeline.Run(context.Background(), dir, m, pipeline.Sink{
		Logs: func(ld plog.Logs) {
			c := plog.NewLogs()
			ld.CopyTo(c)
			mu.Lock()
			defer mu.Unlock()
			for i := 0; i < c.ResourceLogs().Len(); i++ {
				rl := c.ResourceLogs().At(i)
				v, ok := rl.Resource().Attributes().Get("session.id")
				if !ok {
					continue
				}
				id := v.Str()
				e.resource[id] = rl.Resource()
				for j := 0; j < rl.ScopeLogs().Len(); j++ {
					lrs := rl.ScopeLogs().At(j).LogRecords()
					for k := 0; k < lrs.Len(); k++ {
						e.records[id] = append(e.records[id], lrs.At(k))
					}
				}
			}
		},
		Traces: func(td ptrace.Traces) {
			c := ptrace.NewTraces()
			td.CopyTo(c)
			mu.Lock()
			e.traces = append(e.traces, c)
			mu.Unlock()
		},
		Metrics: func(md pmetric.Metrics) {
			c := pmetric.NewMetrics()
			md.CopyTo(c)
			mu.Lock()
			e.metrics = append(e.metrics, c)
			mu.Unlock()
		},
	})
	if err != nil {
		return nil, err
	}
	// Every row must have its record, in its file's order: the floor
	// builds row k's record from record k.
	for _, p := range e.files {
		id := filepath.Base(filepath.Dir(p))
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		recs := e.records[id]
		k := 0
		for line := range lines(data) {
			if k >= len(recs) {
				return nil, fmt.Errorf("%s: more rows than the %d records of session %s", p, len(recs), id)
			}
			if body := recs[k].Body().Str(); body != string(line) {
				return nil, fmt.Errorf("%s row %d: record %d of session %s has another body", p, k+1, k, id)
			}
			k++
		}
		if k != len(recs) {
			return nil, fmt.Errorf("%s: %d rows, %d records of session %s", p, k, len(recs), id)
		}
	}
	return e, nil
}

// lines yields the non-empty lines of data without their newline.
func lines(data []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(data) > 0 {
			n := bytes.IndexByte(data, '\n')
			line := data
			if n >= 0 {
				line, data = data[:n], data[n+1:]
			} else {
				data = nil
			}
			if len(line) > 0 && !yield(line) {
				return
			}
		}
	}
}

// floorPass is one pass of the contract floor over the corpus; it returns
// the log records and spans it built.
func floorPass(e *emitted, read, back *fastjson.Parser) (records, spans int, err error) {
	for _, p := range e.files {
		id := filepath.Base(filepath.Dir(p))
		recs := e.records[id]
		data, err := os.ReadFile(p) // memory of its own, as the receiver reads into
		if err != nil {
			return 0, 0, err
		}
		ld := plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		e.resource[id].CopyTo(rl.Resource())
		lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
		lrs.EnsureCapacity(len(recs))
		k := 0
		for line := range lines(data) {
			if _, err := read.ParseBytes(line); err != nil {
				return 0, 0, fmt.Errorf("%s row %d: %w", p, k+1, err)
			}
			src := recs[k]
			k++
			lr := lrs.AppendEmpty()
			lr.SetEventName(src.EventName())
			lr.SetTimestamp(src.Timestamp())
			lr.SetObservedTimestamp(src.ObservedTimestamp())
			lr.SetTraceID(src.TraceID())
			lr.SetSpanID(src.SpanID())
			lr.SetFlags(src.Flags())
			src.Attributes().CopyTo(lr.Attributes())
			lr.Body().SetStr(unsafe.String(unsafe.SliceData(line), len(line)))
		}
		// The connector reads every record back.
		for i := 0; i < lrs.Len(); i++ {
			body := lrs.At(i).Body().Str()
			if _, err := back.ParseBytes(unsafe.Slice(unsafe.StringData(body), len(body))); err != nil {
				return 0, 0, fmt.Errorf("%s record %d: %w", p, i, err)
			}
		}
		records += lrs.Len()
	}
	for _, td := range e.traces {
		c := ptrace.NewTraces()
		td.CopyTo(c)
		spans += c.SpanCount()
	}
	for _, md := range e.metrics {
		md.CopyTo(pmetric.NewMetrics())
	}
	return records, spans, nil
}

func BenchmarkContractFloor(b *testing.B) {
	e := pipelineCorpus(b)
	b.SetBytes(e.m.Bytes)
	b.ReportAllocs()
	var read, back fastjson.Parser
	start, cpu0 := pipeline.Start()
	for range b.N {
		records, spans, err := floorPass(e, &read, &back)
		if err != nil {
			b.Fatal(err)
		}
		if int64(records) != e.m.Rows || int64(spans) != e.m.Spans {
			b.Fatalf("built %d records, %d spans; want %d, %d", records, spans, e.m.Rows, e.m.Spans)
		}
	}
	pipeline.ReportPerEvent(b, e.m, start, cpu0)
}

// BenchmarkFilePipeline is bench/pipeline's benchmark of the real
// pipeline, here so that bench/floor.sh runs both in one binary.
func BenchmarkFilePipeline(b *testing.B) {
	e := pipelineCorpus(b)
	b.SetBytes(e.m.Bytes)
	b.ReportAllocs()
	start, cpu0 := pipeline.Start()
	for range b.N {
		if err := pipeline.Run(context.Background(), e.dir, e.m, pipeline.Sink{}); err != nil {
			b.Fatal(err)
		}
	}
	pipeline.ReportPerEvent(b, e.m, start, cpu0)
}
