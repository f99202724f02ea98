package logrecord

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// The handoff spares the second decode of a row. The session_event
// receiver decodes and validates every row before it builds its record; the
// turn_state connector reads that record back, and decoding the body again
// was a quarter of the collector's CPU. When both run in one process, the
// Tracker leaves each event record's decoded row here, keyed by the body
// string it put on the record, and the Reader takes it instead of decoding
// — only when the record it reads carries that very string (the same
// memory, so the same bytes) and its session's format, fixed by a header,
// is the one the receiver decoded under. Everything else finds no entry
// and is decoded as before: records that crossed a process (Kafka, OTLP)
// or were rebuilt by another component, header-less streams (their format
// is inferred per reader), rows with problems, entries already overwritten.
//
// The receiver must not reuse a row (its Events, their strings) after
// Append: the connector's engine keeps pointers to the events it is
// handed, as it does to the rows it decodes itself.
//
// The table is a ring of handoffSlots entries: an entry is freed when it is
// taken, and overwritten when the ring comes round to it, so records that
// never reach a connector hold at most handoffSlots rows. Nothing is left
// here until a Reader exists in the process.
const handoffSlots = 1 << 14

type handoffEntry struct {
	// body keeps the record's string alive: while the entry exists no
	// other string can take its address.
	body   string
	row    *sessionlog.Row
	format sessionlog.Format
}

type handoffTable struct {
	mu    sync.Mutex
	slots []handoffEntry
	index map[*byte]int // body data → slot
	next  int
}

var (
	handoff       = &handoffTable{}
	readerCreated atomic.Bool
)

// put leaves row, decoded from body under format, for a Reader.
func (h *handoffTable) put(body string, row *sessionlog.Row, format sessionlog.Format) {
	if !readerCreated.Load() || body == "" {
		return
	}
	key := unsafe.StringData(body)
	h.mu.Lock()
	if h.slots == nil {
		h.slots = make([]handoffEntry, handoffSlots)
		h.index = make(map[*byte]int, handoffSlots)
	}
	slot := h.next
	h.next = (h.next + 1) % len(h.slots)
	if old := h.slots[slot].body; old != "" {
		delete(h.index, unsafe.StringData(old))
	}
	h.slots[slot] = handoffEntry{body: body, row: row, format: format}
	h.index[key] = slot
	h.mu.Unlock()
}

// take returns and frees the entry left for body, if any.
func (h *handoffTable) take(body string) (handoffEntry, bool) {
	if body == "" {
		return handoffEntry{}, false
	}
	key := unsafe.StringData(body)
	h.mu.Lock()
	defer h.mu.Unlock()
	slot, ok := h.index[key]
	if !ok || len(h.slots[slot].body) != len(body) {
		return handoffEntry{}, false
	}
	e := h.slots[slot]
	h.slots[slot] = handoffEntry{}
	delete(h.index, key)
	return e, true
}

// len is the number of entries waiting (tests).
func (h *handoffTable) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.index)
}

// handoffable: rows the Reader would decode to the same result without
// knowing more than the record — event rows without problems, within the
// Reader's row limit, decoded under a header-fixed format.
func handoffable(row *sessionlog.Row, f sessionlog.Format) bool {
	return f.FromHeader && len(row.Problems) == 0 && len(row.Bytes) <= sessionlog.DefaultMaxRowBytes &&
		(row.Kind == sessionlog.RowEvent || row.Kind == sessionlog.RowPacked)
}

// Pending lists the bodies of ld's event records, for Release: taken
// before ld goes to the next consumer (after that, ld is not ours to read).
// Nil when no Reader exists in the process.
func Pending(ld plog.Logs) []string {
	if !readerCreated.Load() {
		return nil
	}
	out := make([]string, 0, ld.LogRecordCount())
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if lr.EventName() == EventNameEvent && lr.Body().Type() == pcommon.ValueTypeStr {
					out = append(out, lr.Body().Str())
				}
			}
		}
	}
	return out
}

// Release drops the entries left for the bodies Pending listed that no
// Reader took. A producer calls it once its next consumer has returned: a
// connector reading in the same call has taken its rows by then, so what is
// left belongs to records refused on the way (a memory_limiter, a full
// queue) or handed to an asynchronous component, which then decodes them
// itself. Without it, the rows of refused batches would stay in the ring —
// holding memory exactly when a memory_limiter wants it back.
func Release(bodies []string) {
	for _, b := range bodies {
		handoff.take(b)
	}
}
