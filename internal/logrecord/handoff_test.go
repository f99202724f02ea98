package logrecord

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// handoffRows builds the records of a file as the receiver does and returns
// them with the rows they were built from, in record order.
func handoffRows(t *testing.T, path string) (plog.Logs, []*sessionlog.Row) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
	require.NoError(t, err)
	defer dec.Close()
	ld := plog.NewLogs()
	lrs := map[string]plog.LogRecordSlice{}
	tr := NewTracker(0)
	var rows []*sessionlog.Row
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return ld, rows
		}
		require.NoError(t, err)
		id := row.SessionID
		if row.Wrapper == sessionlog.WrapNone {
			id = "fallback"
			if h := dec.Header(); h != nil {
				id = h.ID
			}
		}
		s, ok := lrs[id]
		if !ok {
			s = NewResourceLogs(ld, id, nil)
			lrs[id] = s
		}
		n := s.Len()
		tr.Append(s, id, row, dec.Format(), now)
		if s.Len() > n {
			rows = append(rows, row)
		}
	}
}

// readBack reads records back as the connector does, headers first.
func readBack(t *testing.T, r *Reader, ld plog.Logs) map[plog.LogRecord]Record {
	t.Helper()
	out := map[plog.LogRecord]Record{}
	for _, headers := range []bool{true, false} {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			rl := ld.ResourceLogs().At(i)
			lrs := rl.ScopeLogs().At(0).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				if (lr.EventName() == EventNameHeader) != headers {
					continue
				}
				rec, err := r.Read(rl.Resource(), lr)
				require.NoError(t, err)
				out[lr] = rec
			}
		}
	}
	return out
}

// reencoded is ld through its wire form: the same records with new strings,
// as after a hop through Kafka or OTLP.
func reencoded(t *testing.T, ld plog.Logs) plog.Logs {
	t.Helper()
	b, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	out, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
	require.NoError(t, err)
	return out
}

// In one process the connector's Reader takes the receiver's rows instead
// of decoding again, and gets exactly what a decode gives.
func TestHandoffSameAsDecode(t *testing.T) {
	for _, name := range []string{"v0-packed.jsonl", "v4-tools.jsonl", "v2-stream.jsonl", "crash-repaired.jsonl"} {
		t.Run(name, func(t *testing.T) {
			r := NewReader(0)
			ld, rows := handoffRows(t, filepath.Join("..", "..", "testdata", "dialects", name))
			byRecord := map[*sessionlog.Row]bool{}
			for _, row := range rows {
				byRecord[row] = true
			}
			got := readBack(t, r, ld)
			want := readBack(t, NewReader(0), reencoded(t, ld))

			hits := 0
			for _, rec := range got {
				if byRecord[rec.Row] {
					hits++
				}
			}
			assert.Equal(t, len(rows)-1, hits, "every event record handed off (the header is decoded)")
			assert.Zero(t, handoff.len(), "every entry taken")

			// The same events, formats and problems as decoding the bytes.
			// Only where the row stands differs: the receiver's has the
			// file's line and offset, a decoded record's has none.
			seqEvents := func(recs map[plog.LogRecord]Record) map[int64]sessionlog.Event {
				out := map[int64]sessionlog.Event{}
				for _, rec := range recs {
					for _, e := range rec.Row.Events {
						require.Same(t, rec.Row, e.Row)
						e.Row = nil
						out[e.Seq] = e
					}
				}
				return out
			}
			rowsBySeq := func(recs map[plog.LogRecord]Record) map[int64]string {
				out := map[int64]string{}
				for _, rec := range recs {
					if len(rec.Row.Events) > 0 {
						out[rec.Row.Events[0].Seq] = fmt.Sprint(rec.Row.Kind, rec.Format, string(rec.Row.Bytes))
					}
				}
				return out
			}
			assert.Equal(t, rowsBySeq(want), rowsBySeq(got))
			assert.Equal(t, seqEvents(want), seqEvents(got))
			for _, rec := range got {
				assert.Empty(t, rec.Row.Problems)
				assert.True(t, rec.Format.FromHeader)
			}
			assert.Len(t, want, len(got))
		})
	}
}

// Without a header the format is inferred per reader: nothing is handed off.
func TestHandoffNotWithoutHeader(t *testing.T) {
	NewReader(0)
	_, rows := handoffRows(t, filepath.Join("..", "..", "testdata", "dialects", "wrap-jsonrpc.jsonl"))
	require.NotEmpty(t, rows)
	assert.Zero(t, handoff.len())
}

// Records that never reach a Reader hold at most the ring; the oldest go.
func TestHandoffBounded(t *testing.T) {
	NewReader(0)
	row := &sessionlog.Row{Kind: sessionlog.RowEvent}
	f := sessionlog.Format{Version: 4, Known: true, FromHeader: true}
	first := fmt.Sprint("row-", 0)
	handoff.put(first, row, f)
	for i := 1; i < handoffSlots+10; i++ {
		handoff.put(fmt.Sprint("row-", i), row, f)
	}
	assert.Equal(t, handoffSlots, handoff.len())
	_, ok := handoff.take(first)
	assert.False(t, ok, "overwritten")
	// Equal bytes in another string are another record: no match.
	_, ok = handoff.take(fmt.Sprint("row-", handoffSlots+9))
	assert.False(t, ok)
	for i := range handoffSlots + 10 { // drain for the other tests
		handoff.take(fmt.Sprint("row-", i))
	}
	handoff.mu.Lock()
	for i := range handoff.slots {
		handoff.slots[i] = handoffEntry{}
	}
	clear(handoff.index)
	handoff.mu.Unlock()
}

// Receivers and connectors run on their own goroutines.
func TestHandoffConcurrent(t *testing.T) {
	NewReader(0)
	f := sessionlog.Format{Version: 4, Known: true, FromHeader: true}
	var wg sync.WaitGroup
	bodies := make(chan string, 64)
	wg.Go(func() {
		defer close(bodies)
		for i := range 2000 {
			b := fmt.Sprint("body-", i)
			handoff.put(b, &sessionlog.Row{Kind: sessionlog.RowEvent}, f)
			bodies <- b
		}
	})
	taken := 0
	wg.Go(func() {
		for b := range bodies {
			if _, ok := handoff.take(b); ok {
				taken++
			}
		}
	})
	wg.Wait()
	assert.Equal(t, 2000, taken)
	assert.Zero(t, handoff.len())
}

// A batch refused on its way to the connector (a memory_limiter) leaves
// nothing behind once its producer releases it: the ring does not hold the
// rows of refused requests while memory is short.
func TestHandoffReleasedAfterRefusal(t *testing.T) {
	NewReader(0)
	for handoff.len() > 0 { // earlier tests' leftovers
		handoff.mu.Lock()
		clear(handoff.index)
		clear(handoff.slots)
		handoff.mu.Unlock()
	}
	ld, rows := handoffRows(t, filepath.Join("..", "..", "testdata", "dialects", "v4-tools.jsonl"))
	require.Greater(t, len(rows), 1)
	pending := Pending(ld)
	require.Equal(t, len(rows)-1, handoff.len(), "every event row left for a Reader")
	require.Len(t, pending, len(rows)-1)
	// No Reader read the batch (the pipeline refused it).
	Release(pending)
	assert.Zero(t, handoff.len(), "refused rows released")

	// A batch that was read: Release finds nothing left and takes nothing
	// it should not.
	ld, _ = handoffRows(t, filepath.Join("..", "..", "testdata", "dialects", "v4-tools.jsonl"))
	pending = Pending(ld)
	readBack(t, NewReader(0), ld)
	assert.Zero(t, handoff.len())
	Release(pending)
	assert.Zero(t, handoff.len())
}
