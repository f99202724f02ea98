//go:build unix

package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/simdjson-go"
	"github.com/valyala/fastjson"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// corpus is every *.jsonl file under the corpus directory, in memory, read
// once per process so that the benchmarks measure parsing, not the disk.
type corpus struct {
	dir   string
	files [][]byte
	bytes int64
	// rows and events are what one pass of Decoder + Validator yields: the
	// physical rows and the logical events (packed rows expanded).
	rows, events int
}

var (
	corpusOnce sync.Once
	corpusData *corpus
	corpusErr  error
)

// corpusDir is $DSH_CORPUS, or else ../shared/dsh-corpus beside the
// repository root (the directory above this module's go.mod).
func corpusDir() (string, error) {
	if d := os.Getenv("DSH_CORPUS"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	// wd is bench/codec; the repository root is two levels up.
	return filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(wd))), "shared", "dsh-corpus"), nil
}

func loadCorpus(b *testing.B) *corpus {
	b.Helper()
	corpusOnce.Do(func() { corpusData, corpusErr = readCorpus() })
	if corpusErr != nil {
		b.Fatal(corpusErr)
	}
	return corpusData
}

func readCorpus() (*corpus, error) {
	dir, err := corpusDir()
	if err != nil {
		return nil, err
	}
	var paths []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("corpus %s (set DSH_CORPUS): %w", dir, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no .jsonl files under %s (set DSH_CORPUS)", dir)
	}
	sort.Strings(paths)
	c := &corpus{dir: dir}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		c.files = append(c.files, data)
		c.bytes += int64(len(data))
	}
	if c.rows, c.events, err = decodeValidateAll(c.files); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeValidateAll is the measured work: every file through a Decoder and
// a Validator, as the receiver's file transport reads them: each row done
// with before the next is read, so its memory is reused (ReuseRows; the
// transport's own arena does the same), as fastjson's Parser reuses its.
func decodeValidateAll(files [][]byte) (rows, events int, err error) {
	for _, data := range files {
		dec, err := sessionlog.NewDecoder(bytes.NewReader(data), sessionlog.Options{ReuseRows: true})
		if err != nil {
			return 0, 0, err
		}
		v := sessionlog.NewValidator()
		for {
			row, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				dec.Close()
				return 0, 0, err
			}
			v.Row(row, dec.Format())
			rows++
			events += len(row.Events)
		}
		v.Finish(dec.Format())
		dec.Close()
	}
	return rows, events, nil
}

// eachLine calls f with every non-blank line of every file.
func eachLine(files [][]byte, f func(line []byte) error) (rows int, err error) {
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
			if err := f(line); err != nil {
				return rows, err
			}
			rows++
		}
	}
	return rows, nil
}

// BenchmarkDecodeValidate decodes and validates the whole corpus per op.
func BenchmarkDecodeValidate(b *testing.B) {
	c := loadCorpus(b)
	run(b, c, func() error {
		_, events, err := decodeValidateAll(c.files)
		if err == nil && events != c.events {
			err = fmt.Errorf("%d events, want %d", events, c.events)
		}
		return err
	})
}

// BenchmarkBaselineMapAny: the same rows, split into lines, each decoded by
// encoding/json into a map[string]any. It neither validates nor expands
// packed rows.
func BenchmarkBaselineMapAny(b *testing.B) {
	c := loadCorpus(b)
	f := func() error {
		rows, err := eachLine(c.files, func(line []byte) error {
			var m map[string]any
			return json.Unmarshal(line, &m)
		})
		return checkRows(c, rows, err)
	}
	run(b, c, f)
}

// BenchmarkFloorFastjson: the same lines, each parsed by fastjson (one
// reused Parser, as its documentation recommends). Parsing only: nothing is
// read out of the parsed values.
func BenchmarkFloorFastjson(b *testing.B) {
	c := loadCorpus(b)
	var p fastjson.Parser
	f := func() error {
		rows, err := eachLine(c.files, func(line []byte) error {
			_, err := p.ParseBytes(line)
			return err
		})
		return checkRows(c, rows, err)
	}
	run(b, c, f)
}

// BenchmarkFloorSimdjson: each file (its rows joined by newlines, as they
// are on disk) parsed by simdjson-go's ParseND, reusing one ParsedJson.
// Skipped where the CPU lacks what simdjson-go needs (AVX2, CLMUL).
func BenchmarkFloorSimdjson(b *testing.B) {
	if !simdjson.SupportedCPU() {
		b.Skip("simdjson-go: CPU not supported")
	}
	c := loadCorpus(b)
	var pj *simdjson.ParsedJson
	f := func() error {
		for _, data := range c.files {
			if len(bytes.TrimSpace(data)) == 0 {
				continue
			}
			var err error
			if pj, err = simdjson.ParseND(data, pj); err != nil {
				return err
			}
		}
		return nil
	}
	run(b, c, f)
}

// shape is what the decoder allocates for one row, as BenchmarkAllocFloor
// repeats it: the row's bytes, and its Row with its events and their
// details or chunks.
type shape struct {
	bytes   int
	events  int
	packed  bool // a Row, []Event and []Chunk of its own
	chunk   bool // one event with a Chunk
	detail  bool // one event with a Detail of its own
	sources int  // an expanded sourceEventSeqs
}

var (
	shapesOnce sync.Once
	shapes     []shape
)

// rowShapes records, outside any timed loop, the shape of every row one
// pass of the decoder returns.
func rowShapes(b *testing.B, c *corpus) []shape {
	shapesOnce.Do(func() {
		empty := &sessionlog.Detail{}
		for _, data := range c.files {
			dec, err := sessionlog.NewDecoder(bytes.NewReader(data), sessionlog.Options{})
			if err != nil {
				b.Fatal(err)
			}
			for {
				row, err := dec.Next()
				if err != nil {
					break
				}
				s := shape{bytes: len(row.Bytes), events: len(row.Events), packed: row.Kind == sessionlog.RowPacked}
				if len(row.Events) == 1 {
					e := &row.Events[0]
					s.chunk = e.Chunk != nil
					s.detail = e.Detail != nil && !reflect.DeepEqual(*e.Detail, *empty)
					s.sources = len(e.Sources)
				}
				shapes = append(shapes, s)
			}
			dec.Close()
		}
	})
	return shapes
}

// The blocks a one-event row is allocated in, as the decoder lays them out.
type (
	rowEvent struct {
		row sessionlog.Row
		ev  [1]sessionlog.Event
	}
	rowDetail struct {
		row sessionlog.Row
		ev  [1]sessionlog.Event
		det sessionlog.Detail
	}
	rowChunk struct {
		row   sessionlog.Row
		ev    [1]sessionlog.Event
		chunk sessionlog.Chunk
	}
)

var sinkRow *sessionlog.Row

// BenchmarkAllocFloor allocates, per op, what one pass of decode+validate
// would hand a caller that keeps every row (each row's bytes copied, a Row
// per row, an Event per logical event, a Detail or Chunk where the decoder
// gives one), with the rows' pointers set, and parses nothing: what
// reading with ReuseRows (as BenchmarkDecodeValidate and the receiver's
// file transport do) saves.
func BenchmarkAllocFloor(b *testing.B) {
	c := loadCorpus(b)
	sh := rowShapes(b, c)
	src := c.files[0]
	run(b, c, func() error {
		for _, s := range sh {
			buf := make([]byte, s.bytes)
			copy(buf, src)
			var r *sessionlog.Row
			switch {
			case s.packed:
				r = new(sessionlog.Row)
				r.Events = make([]sessionlog.Event, s.events)
				chunks := make([]sessionlog.Chunk, s.events)
				for k := range r.Events {
					r.Events[k].Row, r.Events[k].Chunk = r, &chunks[k]
				}
			case s.events != 1:
				r = new(sessionlog.Row)
			case s.chunk:
				o := new(rowChunk)
				r = &o.row
				r.Events = o.ev[:]
				o.ev[0].Row, o.ev[0].Chunk = r, &o.chunk
			case s.detail:
				o := new(rowDetail)
				r = &o.row
				r.Events = o.ev[:]
				o.ev[0].Row, o.ev[0].Detail = r, &o.det
			default:
				o := new(rowEvent)
				r = &o.row
				r.Events = o.ev[:]
				o.ev[0].Row = r
			}
			if s.sources > 0 {
				r.Events[0].Sources = make([]int64, s.sources)
			}
			r.Bytes = buf
			sinkRow = r
		}
		return nil
	})
}

func checkRows(c *corpus, rows int, err error) error {
	if err == nil && rows != c.rows {
		err = fmt.Errorf("%d rows, the decoder reads %d", rows, c.rows)
	}
	return err
}

// run times f, one pass over the corpus per op, after one untimed pass
// that must succeed.
func run(b *testing.B, c *corpus, f func() error) {
	if err := f(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(c.bytes)
	b.ReportAllocs()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := processCPU()
	b.ResetTimer()
	for range b.N {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := processCPU() - cpu0
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	total := float64(c.events) * float64(b.N)
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(total/s, "events/s")
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/total, "allocs/event")
	b.ReportMetric(float64(c.events), "events/op")
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

// TestCorpusParses checks, outside the timed loops, that every floor parser
// accepts every row the decoder accepts, so no benchmark times an early
// error exit.
func TestCorpusParses(t *testing.T) {
	c, err := readCorpus()
	if err != nil {
		t.Fatal(err)
	}
	var p fastjson.Parser
	rows, err := eachLine(c.files, func(line []byte) error {
		_, err := p.ParseBytes(line)
		return err
	})
	if err := checkRows(c, rows, err); err != nil {
		t.Errorf("fastjson: %v", err)
	}
	if simdjson.SupportedCPU() {
		for i, data := range c.files {
			if len(bytes.TrimSpace(data)) == 0 {
				continue
			}
			if _, err := simdjson.ParseND(data, nil); err != nil {
				t.Errorf("simdjson-go, file %d: %v", i, err)
			}
		}
	}
	t.Logf("%s: %d files, %d bytes, %d rows, %d events", c.dir, len(c.files), c.bytes, c.rows, c.events)
}
