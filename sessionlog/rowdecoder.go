package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

// Default limits.
const (
	// DefaultMaxRowBytes is the longest row accepted (4 MiB), as dsh's own
	// OTLP export rejects larger records.
	DefaultMaxRowBytes = 4 << 20
	// DefaultMaxDepth is the deepest JSON nesting accepted. Real rows stay
	// far below it (a tool's JSON schema is the deepest thing dsh writes).
	DefaultMaxDepth = 128
)

// RowDecoder turns physical rows into typed events. It holds per-stream
// state: the format learnt from the header or inferred from evidence, and
// whether a header was seen. It is not safe for concurrent use.
type RowDecoder struct {
	maxRowBytes int
	maxDepth    int
	format      Format
	rows        int
	header      *Header

	// tape, when set, parses every row (a Decoder lends its own);
	// otherwise each Decode parses on the arena's, or takes one from the
	// pool.
	tape *jsontape.Tape

	// The detail and chunk of the event being decoded, allocated with its
	// row (see newEventRow); nil when the row has none.
	det   *Detail
	chunk *Chunk

	// arena, when set, holds the rows decoded (SetArena).
	arena *Arena

	// shallow: decode only what placing an event needs (SetShallow).
	shallow bool
}

// NewRowDecoder returns a RowDecoder with the given limits (zero = default).
func NewRowDecoder(maxRowBytes, maxDepth int) *RowDecoder {
	if maxRowBytes <= 0 {
		maxRowBytes = DefaultMaxRowBytes
	}
	maxRowBytes = jsontape.LimitRowBytes(maxRowBytes)
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if maxDepth > jsontape.MaxDepth {
		maxDepth = jsontape.MaxDepth
	}
	return &RowDecoder{maxRowBytes: maxRowBytes, maxDepth: maxDepth}
}

// Format is the stream's format as known so far.
func (d *RowDecoder) Format() Format { return d.format }

// Header is the stream's header, if one was read.
func (d *RowDecoder) Header() *Header { return d.header }

// SetFormat fixes the format, for callers that know it from elsewhere (a
// header seen in an earlier request of the same session).
func (d *RowDecoder) SetFormat(f Format) { d.format = f }

// SetShallow makes the decoder read, of each event's payload, only what
// the turn model and a record's attributes need (docs/design.md §2): the
// envelope (seq, time, surfaceOp, sourceEventSeqs), turn and step, call
// ids and tool names, a chunk's type, whether a stream is embedded, a
// turn/end's reason kind, a tool/result's error flags and whether a
// request/header carries header.system (what judging an event on its own
// reads: the receiver's HTTP transport) — for a caller
// that places events and hands their rows on, as the receiver's file
// transport and the turn_state processor do. The rows' kinds, problems
// and the format the decoder infers are those of a full decode (the
// checks that yield them all still run); the fields skipped are zero,
// and an embedded stream is an empty Stream. Off by default.
func (d *RowDecoder) SetShallow(on bool) { d.shallow = on }

// shallowStream is the Stream of a shallow decode: present, summarising
// nothing. Nothing writes to it.
var shallowStream = &Stream{}

// SetArena makes the decoder carve the rows of events it decodes from then
// on out of a (nil: allocate each, the default). See Arena for the rows'
// lifetime.
func (d *RowDecoder) SetArena(a *Arena) { d.arena = a }

// evidence upgrades the inferred version (docs/format.md §1.2) unless a header fixed it.
func (d *RowDecoder) evidence(version int, seed bool) {
	if d.format.FromHeader {
		return
	}
	if seed {
		d.format.Seed = true
	}
	if !d.format.Known || version > d.format.Version {
		d.format.Version = version
		d.format.Known = true
	}
}

// A row of one event, allocated together (see newEventRow).
type (
	rowWithEvent struct {
		row Row
		ev  [1]Event
	}
	rowWithDetail struct {
		row Row
		ev  [1]Event
		det Detail
	}
	rowWithChunk struct {
		row   Row
		ev    [1]Event
		chunk Chunk
	}
)

// newEventRow allocates a row of one event of type typ in one piece with
// the event and, when the type has them, its detail or chunk (d.det,
// d.chunk, for decodeData to take).
func (d *RowDecoder) newEventRow(typ string) *Row {
	var r *Row
	d.det, d.chunk = nil, nil
	if a := d.arena; a != nil {
		r = a.rows.one()
		r.Events = a.events.take(1)
		switch {
		case typ == "assistant/chunk":
			d.chunk = a.chunks.one()
		case hasDetail(typ):
			d.det = a.details.one()
		}
		return r
	}
	switch {
	case typ == "assistant/chunk":
		o := new(rowWithChunk)
		r, d.chunk = &o.row, &o.chunk
		r.Events = o.ev[:]
	case hasDetail(typ):
		o := new(rowWithDetail)
		r, d.det = &o.row, &o.det
		r.Events = o.ev[:]
	default:
		o := new(rowWithEvent)
		r = &o.row
		r.Events = o.ev[:]
	}
	return r
}

// newRow is a row without events.
func (d *RowDecoder) newRow() *Row {
	if d.arena != nil {
		return d.arena.rows.one()
	}
	return new(Row)
}
