//go:build unix

package sessionlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// benchCorpus is the whole real corpus in memory, read once per process so
// that the benchmarks measure decoding, not the disk.
type benchCorpus struct {
	files [][]byte
	bytes int64
	// rows and events are what one pass of Decoder + Validator yields: the
	// physical rows and the logical events (packed rows expanded).
	rows, events int
}

var (
	benchOnce sync.Once
	benchData *benchCorpus
)

func loadBenchCorpus(b *testing.B) *benchCorpus {
	b.Helper()
	benchOnce.Do(func() {
		c := &benchCorpus{}
		dir := testcorpus.Dir(b)
		for _, rel := range testcorpus.Files(b) {
			data, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil {
				b.Fatal(err)
			}
			c.files = append(c.files, data)
			c.bytes += int64(len(data))
		}
		c.rows, c.events = decodeValidateAll(b, c.files)
		benchData = c
	})
	if benchData == nil {
		b.Fatal("corpus failed to load")
	}
	return benchData
}

// decodeValidateAll is the measured work: every file through a Decoder and
// a Validator, as the CLI and the receiver read them.
func decodeValidateAll(b *testing.B, files [][]byte) (rows, events int) {
	for _, data := range files {
		dec, err := NewDecoder(bytes.NewReader(data), Options{})
		if err != nil {
			b.Fatal(err)
		}
		v := NewValidator()
		for {
			row, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			v.Row(row, dec.Format())
			rows++
			events += len(row.Events)
		}
		v.Finish(dec.Format())
		dec.Close()
	}
	return rows, events
}

// benchStart is the process state when the timed loop starts.
type benchStart struct {
	mem runtime.MemStats
	cpu time.Duration
}

func startPerEvent(b *testing.B) *benchStart {
	s := &benchStart{}
	runtime.ReadMemStats(&s.mem)
	s.cpu = processCPU()
	b.ResetTimer()
	return s
}

// reportPerEvent adds events/s and allocs/event to a benchmark that handled
// events logical events per op, and cpu-ns/op: the CPU time the process
// used (the GC's workers included), which a busy machine disturbs less than
// the wall-clock ns/op.
func reportPerEvent(b *testing.B, events int, start *benchStart) {
	b.StopTimer()
	cpu := processCPU() - start.cpu
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	total := float64(events) * float64(b.N)
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(total/s, "events/s")
	}
	b.ReportMetric(float64(after.Mallocs-start.mem.Mallocs)/total, "allocs/event")
	b.ReportMetric(float64(events), "events/op")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// processCPU is the user and system CPU time of the process so far, from
// getrusage (hence the file's unix build constraint); zero if it fails.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeValidate decodes and validates the whole corpus per op.
func BenchmarkDecodeValidate(b *testing.B) {
	c := loadBenchCorpus(b)
	b.SetBytes(c.bytes)
	b.ReportAllocs()
	start := startPerEvent(b)
	for range b.N {
		if _, events := decodeValidateAll(b, c.files); events != c.events {
			b.Fatalf("%d events, want %d", events, c.events)
		}
	}
	reportPerEvent(b, c.events, start)
}

// BenchmarkBaselineMapAny is what the goal compares against: the same rows,
// split into lines, each decoded by encoding/json into a map[string]any.
// It neither validates nor expands packed rows; events/s counts the same
// logical events as BenchmarkDecodeValidate so the two rates compare.
func BenchmarkBaselineMapAny(b *testing.B) {
	c := loadBenchCorpus(b)
	if rows := baselineMapAny(b, c.files); rows != c.rows {
		b.Fatalf("baseline decodes %d rows, the decoder %d", rows, c.rows)
	}
	b.SetBytes(c.bytes)
	b.ReportAllocs()
	start := startPerEvent(b)
	for range b.N {
		baselineMapAny(b, c.files)
	}
	reportPerEvent(b, c.events, start)
}

func baselineMapAny(b *testing.B, files [][]byte) (rows int) {
	for _, data := range files {
		for len(data) > 0 {
			line := data
			if n := bytes.IndexByte(data, '\n'); n >= 0 {
				line, data = data[:n], data[n+1:]
			} else {
				data = nil
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				b.Fatal(err)
			}
			rows++
		}
	}
	return rows
}
