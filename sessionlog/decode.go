package sessionlog

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Default limits.
const (
	// DefaultMaxRowBytes is the longest row accepted (4 MiB), as dsh's own
	// OTLP export rejects larger records.
	DefaultMaxRowBytes = 4 << 20
	// DefaultMaxDepth is the deepest JSON nesting accepted. Real rows stay
	// far below it (a tool's JSON schema is the deepest thing dsh writes).
	DefaultMaxDepth = 128
	// maxParserDepth bounds MaxDepth: deeper rows are never legitimate.
	maxParserDepth = 1024
)

// Format is what the decoder knows of the input's dialect and version.
type Format struct {
	// Version is the dsh format version 0–4. Meaningful when Known.
	Version int
	// Known is true once a header or evidence in the events fixed Version.
	Known bool
	// FromHeader is true when Version came from the header line.
	FromHeader bool
	// Seed is true for the simplified seed dialect (docs/format.md §12): no header and
	// seed-only shapes in the events.
	Seed bool
}

// String renders the format for people: "v4", "v0 (inferred)", "seed".
func (f Format) String() string {
	switch {
	case f.Seed:
		return "seed"
	case !f.Known:
		return "unknown (v0 rules)"
	case f.FromHeader:
		return fmt.Sprintf("v%d", f.Version)
	default:
		return fmt.Sprintf("v%d (inferred)", f.Version)
	}
}

// RulesVersion is the version whose rules apply: the known version, else 0
// (docs/format.md §1.2: default to v0 rules; the seed dialect follows v0 rules too).
func (f Format) RulesVersion() int {
	if f.Known && !f.Seed {
		return f.Version
	}
	return 0
}

// UnsupportedVersionError is returned for a header whose version this
// decoder does not read. It is not corruption: a newer writer made the file.
type UnsupportedVersionError struct {
	Line    int
	Version string
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("line %d: unsupported session format version %s (this reader reads 0–4)", e.Line, e.Version)
}

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
	tape *tape

	// The detail and chunk of the event being decoded, allocated with its
	// row (see newEventRow); nil when the row has none.
	det   *Detail
	chunk *Chunk

	// arena, when set, holds the rows decoded (SetArena).
	arena *Arena

	// shallow: decode only what placing an event needs (SetShallow).
	shallow bool
}

// SetShallow makes the decoder read, of each event's payload, only what
// the turn model and a record's attributes need (docs/design.md §2): the
// envelope (seq, time, surfaceOp, sourceEventSeqs), turn and step, call
// ids and tool names, a chunk's type, whether a stream is embedded, a
// turn/end's reason kind and a tool/result's error flag — for a caller
// that places events and hands their rows on, as the receiver's file
// transport and the turn_state processor do. The rows' kinds, problems
// and the format the decoder infers are those of a full decode (the
// checks that yield them all still run); the fields skipped are zero,
// and an embedded stream is an empty Stream. Off by default.
func (d *RowDecoder) SetShallow(on bool) { d.shallow = on }

// shallowStream is the Stream of a shallow decode: present, summarising
// nothing. Nothing writes to it.
var shallowStream = &Stream{}

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

// hasDetail reports whether events of type typ carry a Detail: exactly the
// types whose fields decodeDetail reads (the others share noDetail, so a
// row of theirs is allocated without one).
func hasDetail(typ string) bool {
	switch typ {
	case "turn/end", "tool/call", "tool/result", "user/message", "system/message",
		"developer/message", "assistant/message", "request/header", "request/context",
		"tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch",
		"llm/retry", "llm/retry-started", "session/end-seed", "approval/asked":
		return true
	}
	return false
}

// wrapping is what a row's line wrapper (docs/format.md §10) says, read before the record
// inside is decoded.
type wrapping struct {
	wrapper   Wrapper
	method    string
	sessionID string
	// kind is RowOther or RowInvalid for a row that carries no record
	// (problem says why it is invalid), else RowEvent.
	kind    RowKind
	problem string
}

func (w *wrapping) fill(r *Row, line int, b []byte) {
	r.Line, r.Bytes = line, b
	r.Wrapper, r.Method, r.SessionID = w.wrapper, w.method, w.sessionID
}

// NewRowDecoder returns a RowDecoder with the given limits (zero = default).
func NewRowDecoder(maxRowBytes, maxDepth int) *RowDecoder {
	if maxRowBytes <= 0 {
		maxRowBytes = DefaultMaxRowBytes
	}
	if uint64(maxRowBytes) > maxTapeRow {
		maxRowBytes = int(uint64(maxTapeRowBytes))
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if maxDepth > maxParserDepth {
		maxDepth = maxParserDepth
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

// Decode decodes one physical row. line is its 1-based line number; b must
// not include the newline and is owned by the returned Row from then on.
// The only error is *UnsupportedVersionError; everything else wrong with a
// row is a Violation in Row.Problems.
func (d *RowDecoder) Decode(b []byte, line int) (*Row, error) {
	d.rows++
	invalid := func(code, msg string) (*Row, error) {
		r := &Row{Line: line, Bytes: b, Kind: RowInvalid}
		r.problem(-1, code, msg)
		return r, nil
	}
	if len(b) > d.maxRowBytes {
		return invalid(CodeRowTooLong, fmt.Sprintf("row of %d bytes exceeds the limit of %d bytes", len(b), d.maxRowBytes))
	}
	t := d.tape
	if t == nil {
		if d.arena != nil {
			t = d.arena.parseTape()
		} else {
			t = getTape()
			defer putTape(t)
		}
	}
	// A row that parses is valid UTF-8 (parse checks the strings, JSON has
	// non-ASCII bytes nowhere else); bad UTF-8 anywhere comes first.
	syntax, lossless := t.parse(b, d.maxDepth, true)
	if syntax != nil {
		if !utf8.Valid(b) {
			return invalid(CodeUTF8Invalid, fmt.Sprintf("row is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(b)))
		}
		return invalid(syntax.code, fmt.Sprintf("%s at byte %d", syntax.msg, syntax.offset))
	}
	v := t.root()
	if v.Type() != tObject {
		return invalid(CodeRowNotObject, fmt.Sprintf("row is a JSON %s, not an object", v.Type()))
	}
	var w wrapping
	var m record
	m.read(v)
	env := unwrap(&w, v, &m)
	if !env.ok() {
		r := &Row{Kind: w.kind}
		w.fill(r, line, b)
		if w.problem != "" {
			r.problem(-1, CodeWrapperInvalid, w.problem)
		}
		return r, nil
	}
	if env.i != v.i { // a wrapped record: its own members
		m = record{}
		m.read(env)
	}
	r, err := d.decodeRecord(&w, line, b, env, &m)
	if err != nil {
		return r, err
	}
	if lossless != nil && r.Kind != RowInvalid {
		r.problem(r.FirstSeq(), lossless.code, fmt.Sprintf("%s (byte %d)", lossless.msg, lossless.offset))
	}
	return r, nil
}

func (r *Row) problem(seq int64, code, msg string) {
	r.Problems = append(r.Problems, Violation{Line: r.Line, Seq: seq, Code: code, Message: msg})
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		c, size := utf8.DecodeRune(b[i:])
		if c == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

// unwrap recognises the line wrappers of docs/format.md §10 and returns the record inside,
// or nil when the row carries none (then r is complete).
func unwrap(w *wrapping, v jv, m *record) jv {
	// The first member of each name, from the walk of the row m is.
	typ, method, id, event := m.typ, m.method, m.id, m.event
	if method.ok() && !typ.ok() {
		w.wrapper = WrapJSONRPC
		w.method = method.String()
		params := v.Get("params")
		if params.ok() {
			w.sessionID = params.GetStringBytes("sessionId")
		}
		if w.method != "session.event" {
			w.kind = RowOther
			return jv{}
		}
		ev := params.Get("event")
		if w.sessionID == "" || !ev.ok() || ev.Type() != tObject {
			w.kind = RowInvalid
			w.problem = "session.event notification needs params.sessionId (string) and params.event (object)"
			return jv{}
		}
		return ev
	}
	if !method.ok() && id.ok() && !typ.ok() && !event.ok() {
		// A JSON-RPC response or request without a method we track.
		w.wrapper = WrapJSONRPC
		w.kind = RowOther
		return jv{}
	}
	switch t := typ.String(); t {
	case "session_event":
		w.wrapper = WrapStreamJSON
		w.method = t
		w.sessionID = v.GetStringBytes("sessionId")
		if w.sessionID == "" || !event.ok() || event.Type() != tObject {
			w.kind = RowInvalid
			w.problem = "session_event line needs sessionId (string) and event (object)"
			return jv{}
		}
		return event
	case "result":
		w.wrapper = WrapStreamJSON
		w.method = t
		w.sessionID = v.GetStringBytes("sessionId")
		w.kind = RowOther
		return jv{}
	}
	if !typ.ok() && event.ok() {
		w.wrapper = WrapEnvelope
		w.sessionID = v.GetStringBytes("sessionId")
		if w.sessionID == "" || event.Type() != tObject {
			w.kind = RowInvalid
			w.problem = "{sessionId, event} line needs sessionId (string) and event (object)"
			return jv{}
		}
		return event
	}
	return v
}

// decodeRecord decodes a header, packed row or event record into a new
// row (line, b and w's fields filled in).
func (d *RowDecoder) decodeRecord(w *wrapping, line int, b []byte, v jv, m *record) (*Row, error) {
	tv := m.typ
	if !tv.ok() || tv.Type() != tString {
		r := d.newRow()
		w.fill(r, line, b)
		r.Kind = RowInvalid
		r.problem(seqOf(v), CodeEnvelopeInvalid, "record has no string \"type\"")
		return r, nil
	}
	typ := tv.String()
	switch typ {
	case "session":
		r := d.newRow()
		w.fill(r, line, b)
		return r, d.decodeHeader(r, v)
	case "text-chunks", "reasoning-chunks", "tool-call-chunks":
		if m.seq0.ok() || !m.seq.ok() {
			r := d.newRow()
			w.fill(r, line, b)
			d.evidence(0, false)
			d.decodePacked(r, v, typ)
			return r, nil
		}
	}
	r := d.newEventRow(typ)
	w.fill(r, line, b)
	r.Kind = RowEvent
	e := &r.Events[0]
	e.Row = r
	e.Type = typ
	e.Detail = noDetail
	d.decodeEnvelope(r, e, v, m)
	d.det, d.chunk = nil, nil
	return r, nil
}

// record holds the members of an event record the decoder reads (the
// first of each name), found in one walk over the record.
type record struct {
	typ, seq, seq0, time, data, ignorable, surfaceOp, sources jv
	// method, id and event are the line wrappers' keys (unwrap); in a
	// record they are extra.
	method, id, event jv
	// extra: the record has a key a v2+ envelope may not carry.
	extra bool
}

func (m *record) read(v jv) {
	t := v.t
	end := t.nodes[v.i].next
	for k := v.i + 1; k < end; k = t.nodes[k+1].next {
		val := jv{t, k + 1}
		var slot *jv
		n := &t.nodes[k]
		key := t.s[n.start:n.end]
		if n.esc {
			key = unescape(key)
		}
		switch key {
		case "type":
			slot = &m.typ
		case "seq":
			slot = &m.seq
		case "time":
			slot = &m.time
		case "data":
			slot = &m.data
		case "ignorable":
			slot = &m.ignorable
		case "surfaceOp":
			slot = &m.surfaceOp
		case "sourceEventSeqs":
			slot = &m.sources
		case "seq0":
			slot = &m.seq0
			m.extra = true
		case "method":
			slot = &m.method
			m.extra = true
		case "id":
			slot = &m.id
			m.extra = true
		case "event":
			slot = &m.event
			m.extra = true
		default:
			m.extra = true
			continue
		}
		if !slot.ok() {
			*slot = val
		}
	}
}

// intValue reads a safe integer (intField of a value found already).
func intValue(f jv) (int64, bool) {
	if !f.ok() || f.Type() != tNumber {
		return 0, false
	}
	n, err := f.Int64()
	if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
		return 0, false
	}
	return n, true
}

func seqOf(v jv) int64 {
	if s := v.Get("seq"); s.ok() {
		if n, err := s.Int64(); err == nil && n >= 0 {
			return n
		}
	}
	return -1
}

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

var headerKeysV2 = map[string]bool{
	"type": true, "version": true, "id": true, "createdAt": true, "isSeeded": true,
	"delegationDepth": true, "cwd": true, "parentSession": true, "origin": true, "agentPreset": true,
}

func (d *RowDecoder) decodeHeader(r *Row, v jv) error {
	r.Kind = RowHeader
	h := &Header{}
	r.Header = h
	if d.rows != 1 {
		r.problem(-1, CodeHeaderMisplaced, "a session header may only be the first row")
	}
	if vv := v.Get("version"); vv.ok() {
		n, err := vv.Int()
		if err != nil || n < 0 || n > 4 {
			return &UnsupportedVersionError{Line: r.Line, Version: string(vv.MarshalTo(nil))}
		}
		h.Version, h.HasVersion = n, true
	}
	bad := func(msg string) { r.problem(-1, CodeHeaderInvalid, msg) }
	// The header outlives its row (Decoder.Header, RowDecoder.Header): its
	// strings are copies, not views of memory a ReuseRows Decoder or an
	// arena's caller reuses.
	h.ID = strings.Clone(v.GetStringBytes("id"))
	if h.ID == "" {
		bad("header needs a non-empty string \"id\"")
	}
	r.SessionID = h.ID
	if n, ok := intField(v, "createdAt"); ok {
		h.CreatedAt = n
	} else {
		bad("header needs an integer \"createdAt\"")
	}
	if n, ok := intField(v, "delegationDepth"); ok {
		h.DelegationDepth = n
	} else if h.Version >= 2 {
		// Required on disk by the format, but early v0 writers omitted it.
		bad("header needs an integer \"delegationDepth\"")
	}
	h.Cwd = strings.Clone(v.GetStringBytes("cwd"))
	h.ParentSession = strings.Clone(v.GetStringBytes("parentSession"))
	h.Origin = strings.Clone(v.GetStringBytes("origin"))
	h.AgentPreset = strings.Clone(v.GetStringBytes("agentPreset"))
	if n, ok := intField(v, "seedLength"); ok {
		h.SeedLength, h.HasSeedLength = n, true
	}
	if b := v.Get("isSeeded"); b.ok() {
		bv, err := b.Bool()
		if err != nil {
			bad("header \"isSeeded\" must be a boolean")
		}
		h.IsSeeded, h.HasIsSeeded = bv, true
	}
	if h.Version >= 2 {
		if !h.HasIsSeeded {
			bad(fmt.Sprintf("a v%d header needs a boolean \"isSeeded\"", h.Version))
		}
		v.GetObject().Visit(func(k string, _ jv) {
			if !headerKeysV2[string(k)] {
				bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
			}
		})
	} else {
		for _, k := range []string{"sandboxMode", "approvalPolicy"} {
			if v.Get(k).ok() {
				bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
			}
		}
	}
	d.header = h
	d.format = Format{Version: h.Version, Known: true, FromHeader: true}
	return nil
}

// intField reads a safe integer member.
func intField(v jv, key string) (int64, bool) { return intValue(v.Get(key)) }

// envelopeKeyV2 reports whether a v2+ event record may carry key.
func envelopeKeyV2(key string) bool {
	switch key {
	case "type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs":
		return true
	}
	return false
}

// decodeEnvelope fills e from an event record (docs/format.md §4) and its typed payload.
func (d *RowDecoder) decodeEnvelope(r *Row, e *Event, v jv, m *record) {
	e.Seq = -1
	if n, ok := intValue(m.seq); ok && n >= 0 {
		e.Seq = n
	} else {
		r.Kind = RowInvalid
		r.Events = nil
		r.problem(-1, CodeEnvelopeInvalid, fmt.Sprintf("%s event has no non-negative integer \"seq\"", e.Type))
		return
	}
	if n, ok := intValue(m.time); ok {
		e.Time = n
	} else {
		r.problem(e.Seq, CodeEnvelopeInvalid, fmt.Sprintf("%s event has no integer \"time\"", e.Type))
	}
	if ig := m.ignorable; ig.ok() {
		if ig.Type() != tTrue {
			r.problem(e.Seq, CodeEnvelopeInvalid, "\"ignorable\" may only be the literal true")
		}
		e.Ignorable = true
	}
	data := m.data
	if !data.ok() {
		r.problem(e.Seq, CodeEnvelopeInvalid, fmt.Sprintf("%s event has no \"data\"", e.Type))
	}
	if m.extra && d.format.RulesVersion() >= 2 {
		v.GetObject().Visit(func(k string, _ jv) {
			if !envelopeKeyV2(k) {
				r.problem(e.Seq, CodeEnvelopeExtraKeys, fmt.Sprintf("the v2+ envelope is closed; %q is not allowed", k))
			}
		})
	}
	if op := m.surfaceOp; op.ok() {
		d.decodeSurfaceOp(r, e, op)
	}
	if src := m.sources; src.ok() {
		d.decodeSources(r, e, src)
	}
	if data.ok() && data.Type() == tObject {
		d.decodeData(r, e, data)
	}
}

func (d *RowDecoder) decodeSurfaceOp(r *Row, e *Event, op jv) {
	if op.Type() == tString {
		if string(op.GetStringBytes()) == "append" {
			e.Surface.Kind = SurfaceAppend
			return
		}
		e.Surface.Kind = SurfaceInvalid
		r.problem(e.Seq, CodeSurfaceOpInvalid, fmt.Sprintf("unknown surfaceOp %s", op.MarshalTo(nil)))
		return
	}
	if op.Type() == tObject && string(op.GetStringBytes("op")) == "replace" {
		obj := op.GetObject()
		a, okA := intField(op, "startSeq")
		b, okB := intField(op, "endSeq")
		if okA && okB && obj.Len() == 3 {
			e.Surface = SurfaceOp{Kind: SurfaceReplace, Start: a, End: b, SeqKeys: true}
			d.evidence(3, false)
			return
		}
		a, okA = intField(op, "start")
		b, okB = intField(op, "end")
		if okA && okB && obj.Len() == 3 {
			e.Surface = SurfaceOp{Kind: SurfaceReplace, Start: a, End: b}
			return
		}
	}
	e.Surface.Kind = SurfaceInvalid
	r.problem(e.Seq, CodeSurfaceOpInvalid, fmt.Sprintf("surfaceOp %s is neither \"append\" nor {op:\"replace\", start/end or startSeq/endSeq}", op.MarshalTo(nil)))
}

// maxSourceSeqs bounds how many seqs one sourceEventSeqs may expand to: a
// range pair is a few bytes but can name up to 2^53 seqs. Real citations (a
// compaction's shadowed nodes, an attempt's chunks) stay far below it.
const maxSourceSeqs = 1 << 20

// sourcesLen is how many seqs sourceEventSeqs (an array) expands to when
// it is well formed, at most maxSourceSeqs: the capacity to expand it into
// with one allocation. Malformed entries count as one, and so do ranges
// that reach seq (the event's own, when not negative), which
// decodeSources rejects before expanding them.
func sourcesLen(src jv, seq int64) int {
	n := 0
	for el, end := src.elems(); el.i < end && n < maxSourceSeqs; el = el.after() {
		if el.Type() == tArray {
			if a := el.first(); a.ok() {
				if b := a.after(); b.i < el.t.nodes[el.i].next && b.after().i == el.t.nodes[el.i].next {
					first, err1 := a.Int64()
					last, err2 := b.Int64()
					if err1 == nil && err2 == nil && first >= 0 && first <= last && last-first < maxSourceSeqs &&
						(seq < 0 || last < seq) {
						n += int(last - first + 1)
						continue
					}
				}
			}
		}
		n++
	}
	return min(n, maxSourceSeqs)
}

// decodeSources expands sourceEventSeqs (docs/format.md §5.2) and checks the rules that
// need nothing but the event itself.
func (d *RowDecoder) decodeSources(r *Row, e *Event, src jv) {
	e.HasSources = true
	if src.Type() != tArray {
		r.problem(e.Seq, CodeSourcesInvalid, "sourceEventSeqs must be an array")
		return
	}
	var problem string
	bad := func(format string, args ...any) bool {
		problem = fmt.Sprintf(format, args...)
		return false
	}
	var out []int64
	if n := sourcesLen(src, e.Seq); d.arena != nil {
		out = d.arena.seqs.take(n)[:0]
	} else {
		out = make([]int64, 0, n)
	}
	src.each(func(el jv) bool {
		switch el.Type() {
		case tNumber:
			n, err := el.Int64()
			if err != nil || n < 0 || n > maxSafeInteger {
				return bad("sourceEventSeqs element %s is not a seq", el.raw())
			}
			out = append(out, n)
		case tArray:
			first, last, k := int64(-1), int64(-1), 0
			okPair := true
			el.each(func(x jv) bool {
				n, err := x.Int64()
				if err != nil || k > 1 {
					okPair = false
					return false
				}
				if k == 0 {
					first = n
				} else {
					last = n
				}
				k++
				return true
			})
			if !okPair || k != 2 {
				return bad("sourceEventSeqs range %s must be [first, last] integers", el.raw())
			}
			if first < 0 || first > last {
				return bad("sourceEventSeqs range %s needs integers first ≤ last", el.raw())
			}
			if e.Seq >= 0 && last >= e.Seq {
				return bad("sourceEventSeqs range %s reaches seq %d, not earlier than the event", el.raw(), last)
			}
			if last-first+1 > int64(maxSourceSeqs-len(out)) {
				return bad("sourceEventSeqs expands to more than %d seqs", maxSourceSeqs)
			}
			e.SourcesRanged = true
			for n := first; n <= last; n++ {
				out = append(out, n)
			}
		default:
			return bad("sourceEventSeqs element %s is neither a seq nor a [first, last] range", el.raw())
		}
		return true
	})
	if problem != "" {
		r.problem(e.Seq, CodeSourcesInvalid, problem)
		return
	}
	e.Sources = out
	increasing := true
	for i, n := range out {
		if e.Seq >= 0 && n >= e.Seq {
			r.problem(e.Seq, CodeSourcesInvalid, fmt.Sprintf("sourceEventSeqs cites seq %d, not earlier than the event", n))
			return
		}
		if i > 0 && n <= out[i-1] {
			if e.SourcesRanged {
				r.problem(e.Seq, CodeSourcesInvalid, "a range-encoded sourceEventSeqs must be strictly increasing")
				return
			}
			increasing = false
		}
	}
	if !increasing { // only an unsorted list can hide a repeat
		seen := make(map[int64]struct{}, len(out))
		for _, n := range out {
			if _, dup := seen[n]; dup {
				r.problem(e.Seq, CodeSourcesInvalid, fmt.Sprintf("sourceEventSeqs cites seq %d twice", n))
				return
			}
			seen[n] = struct{}{}
		}
	}
}

// decodeData reads the typed payload fields the validator and engine need.
func (d *RowDecoder) decodeData(r *Row, e *Event, data jv) {
	turn, step := data.get2("turn", "step")
	if n, ok := intValue(turn); ok {
		e.Turn, e.HasTurn = n, true
	}
	if n, ok := intValue(step); ok {
		e.Step, e.HasStep = n, true
	}
	switch e.Type {
	case "assistant/attempt":
		d.evidence(2, false)
		if d.shallow {
			e.Stream = shallowStream
		} else {
			e.Stream = d.decodeStream(data.Get("stream"))
		}
	case "assistant/chunk":
		d.evidence(0, false)
		e.Chunk = d.chunk
		if c := data.Get("chunk"); d.shallow {
			if c.Type() == tObject {
				e.Chunk.Type = c.GetStringBytes("type")
			}
		} else {
			d.decodeChunk(e.Chunk, c)
		}
	}
	if d.det != nil { // the type has details (hasDetail)
		e.Detail = d.det
		if d.shallow {
			d.decodePlacement(e, data)
		} else {
			d.decodeDetail(e, data)
		}
	}
}

// decodePlacement is decodeDetail of a shallow decode (SetShallow): the
// detail fields placing an event reads, and every check of decodeDetail
// that is evidence of the format, made the same way.
func (d *RowDecoder) decodePlacement(e *Event, data jv) {
	switch e.Type {
	case "turn/end":
		if r := data.Get("reason"); r.Type() == tString {
			e.Reason.Kind = r.String()
		} else {
			e.Reason.Kind = r.GetStringBytes("kind")
		}
		if e.Reason.Kind == "forked" {
			d.evidence(4, false)
		}
	case "tool/call", "approval/asked":
		e.CallID = data.GetStringBytes("callId")
		if e.Type == "tool/call" {
			e.ToolName = data.GetStringBytes("name")
		} else {
			e.ToolName = data.GetStringBytes("toolName")
		}
	case "tool/result":
		d.decodeToolResult(e, data)
	case "user/message":
		if !data.Get("id").ok() {
			d.evidence(0, true)
		}
	case "system/message":
		d.evidence(3, false)
	case "developer/message":
		d.evidence(4, false)
	case "assistant/message":
		msg := d.messageOf(data)
		msg.Get("content").each(func(b jv) bool {
			if b.GetStringBytes("type") == "tool_use" {
				d.evidence(0, true)
				return false
			}
			return true
		})
		if data.Get("stream").ok() {
			d.evidence(2, false)
			e.Stream = shallowStream
		}
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		e.SubCallID = data.GetStringBytes("subCallId")
		e.CallID = data.GetStringBytes("parentCallId")
		e.ToolName = data.GetStringBytes("name")
	}
}

// decodeDetail reads the fields of e.Detail, which is the event's own
// (hasDetail(e.Type)).
func (d *RowDecoder) decodeDetail(e *Event, data jv) {
	switch e.Type {
	case "turn/end":
		e.Reason = decodeReason(data.Get("reason"))
		if e.Reason.Kind == "forked" {
			d.evidence(4, false)
		}
	case "tool/call":
		e.CallID = string(data.GetStringBytes("callId"))
		e.ToolName = string(data.GetStringBytes("name"))
		e.Arguments = string(data.GetStringBytes("arguments"))
	case "tool/result":
		d.decodeToolResult(e, data)
	case "user/message":
		var m [rmMembers]jv
		data.gather(resultMessageMember, m[:])
		e.Role = m[rmRole].String()
		e.MessageID = m[rmID].String()
		e.SourceKind = m[rmSource].Get("kind").String()
		e.ContentEmpty = m[rmContent].arrayLen() == 0
		if !m[rmID].ok() {
			d.evidence(0, true)
		}
	case "system/message", "developer/message":
		var m [rmMembers]jv
		data.Get("message").gather(resultMessageMember, m[:])
		e.Role = m[rmRole].String()
		e.MessageID = m[rmID].String()
		e.SourceKind = m[rmSource].Get("kind").String()
		e.ContentEmpty = m[rmContent].arrayLen() == 0
		if e.Type == "developer/message" {
			d.evidence(4, false)
		} else {
			d.evidence(3, false)
		}
	case "assistant/message":
		d.decodeAssistantMessage(e, data)
	case "request/header":
		e.HasSystem = data.Get("header", "system").ok()
		e.Provider = string(data.GetStringBytes("header", "config", "provider"))
		e.Model = string(data.GetStringBytes("header", "config", "model"))
	case "request/context":
		e.Provider = string(data.GetStringBytes("provider"))
		e.Model = string(data.GetStringBytes("model"))
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		e.SubCallID = string(data.GetStringBytes("subCallId"))
		e.CallID = string(data.GetStringBytes("parentCallId"))
		e.RootCallID = string(data.GetStringBytes("rootCallId"))
		e.ToolName = string(data.GetStringBytes("name"))
		e.IsError = data.GetBool("isError")
		e.ErrorCode = string(data.GetStringBytes("error", "code"))
	case "llm/retry":
		e.Provider = string(data.GetStringBytes("provider"))
		if n, ok := intField(data, "retry"); ok {
			e.Retry = n
		}
		e.Failure = decodeFailure(data.Get("failure"))
	case "llm/retry-started":
		if n, ok := intField(data, "retry"); ok {
			e.Retry = n
		}
	case "session/end-seed":
		e.Inherited = data.GetBool("inherited")
	case "approval/asked":
		e.CallID = string(data.GetStringBytes("callId"))
		e.ToolName = string(data.GetStringBytes("toolName"))
	}
}

// messageOf is data.message, or data itself for the earliest v0 writers,
// which put the message's fields (content, callId, …) straight into data.
func (d *RowDecoder) messageOf(data jv) jv {
	if m := data.Get("message"); m.ok() {
		return m
	}
	return data
}

func (d *RowDecoder) decodeToolResult(e *Event, data jv) {
	msg := d.messageOf(data)
	var m [rmMembers]jv
	msg.gather(resultMessageMember, m[:])
	e.Role = m[rmRole].String()
	e.MessageID = m[rmID].String()
	srcKind, srcCallID := m[rmSource].get2("kind", "callId")
	e.SourceKind = srcKind.String()
	e.SyntheticResult = strings.HasPrefix(e.MessageID, "interrupted-tool-result-")
	// Call id, first of: toolCallId, source.callId, the tool-result block (docs/format.md §13.3).
	block := m[rmContent].Get("0")
	switch {
	case m[rmToolCallID].ok():
		e.CallID = m[rmToolCallID].String()
		if e.Role == "tool" {
			d.evidence(4, false)
		}
	case srcCallID.ok():
		e.CallID = srcCallID.String()
	case m[rmCallID].ok():
		e.CallID = m[rmCallID].String()
	case block.ok() && block.GetStringBytes("type") == "tool-result":
		e.CallID = block.GetStringBytes("toolCallId")
	}
	// Error flag (docs/format.md §13.4).
	dataErr := data.Get("error")
	switch {
	case m[rmIsError].ok():
		e.IsError = m[rmIsError].Type() == tTrue
	case block.ok() && block.Get("isError").ok():
		e.IsError = block.GetBool("isError")
	default:
		e.IsError = dataErr.ok()
	}
	e.ErrorCode = dataErr.GetStringBytes("code")
	e.HasErrorDetail = dataErr.ok()
	if m[rmToolName].ok() {
		e.ToolName = m[rmToolName].String()
		d.evidence(0, true)
	}
	if m[rmContent].Type() == tString {
		d.evidence(0, true)
	}
}

// The members of a message that the decoder reads (all of them for a tool
// result's; role, id, source and content for the other messages), found
// in one walk (jv.gather): their indexes, and the key of each.
const (
	rmRole = iota
	rmID
	rmSource
	rmContent
	rmToolCallID
	rmCallID
	rmIsError
	rmToolName
	rmMembers
)

func resultMessageMember(key string) int {
	switch key {
	case "role":
		return rmRole
	case "id":
		return rmID
	case "source":
		return rmSource
	case "content":
		return rmContent
	case "toolCallId":
		return rmToolCallID
	case "callId":
		return rmCallID
	case "isError":
		return rmIsError
	case "toolName":
		return rmToolName
	}
	return -1
}

func (d *RowDecoder) decodeAssistantMessage(e *Event, data jv) {
	var m [rmMembers]jv
	d.messageOf(data).gather(resultMessageMember, m[:])
	e.Role = m[rmRole].String()
	e.MessageID = m[rmID].String()
	var src [smMembers]jv
	m[rmSource].gather(sourceMember, src[:])
	e.SourceKind = src[smKind].String()
	e.Provider = src[smProvider].String()
	e.Model = src[smModel].String()
	content := m[rmContent]
	e.ContentEmpty = content.arrayLen() == 0
	content.each(func(b jv) bool {
		switch string(b.GetStringBytes("type")) {
		case "tool-call":
			e.Advertised = append(e.Advertised, ToolCallRef{
				ID:        string(b.GetStringBytes("id")),
				Name:      string(b.GetStringBytes("name")),
				Arguments: string(b.GetStringBytes("arguments")),
			})
		case "tool_use":
			d.evidence(0, true)
			var args string
			if in := b.Get("input"); in.ok() {
				args = string(in.MarshalTo(nil))
			}
			e.Advertised = append(e.Advertised, ToolCallRef{
				ID:        string(b.GetStringBytes("id")),
				Name:      string(b.GetStringBytes("name")),
				Arguments: args,
			})
		}
		return true
	})
	e.Usage = d.decodeUsage(data.Get("usage"))
	e.Interrupted = data.GetBool("interrupted")
	if s := data.Get("stream"); s.ok() {
		d.evidence(2, false)
		e.Stream = d.decodeStream(s)
	}
}

func (d *RowDecoder) decodeUsage(u jv) *Usage {
	if !u.ok() || u.Type() != tObject {
		return nil
	}
	var out *Usage
	if d.arena != nil {
		out = d.arena.usages.one()
	} else {
		out = new(Usage)
	}
	// One walk over the members, not one lookup per count.
	var m [6]jv
	u.gather(usageMember, m[:])
	for x, dst := range [...]*int64{&out.InputTokens, &out.OutputTokens, &out.TotalTokens,
		&out.CacheReadTokens, &out.CacheWriteTokens, &out.ReasoningTokens} {
		*dst, _ = intValue(m[x])
	}
	return out
}

// The members of a message's source that decodeAssistantMessage reads,
// found in one walk (jv.gather).
const (
	smKind = iota
	smProvider
	smModel
	smMembers
)

func sourceMember(key string) int {
	switch key {
	case "kind":
		return smKind
	case "provider":
		return smProvider
	case "model":
		return smModel
	}
	return -1
}

// usageMember is the index of a TokenUsage count in decodeUsage's order.
func usageMember(key string) int {
	switch key {
	case "inputTokens":
		return 0
	case "outputTokens":
		return 1
	case "totalTokens":
		return 2
	case "cacheReadTokens":
		return 3
	case "cacheWriteTokens":
		return 4
	case "reasoningTokens":
		return 5
	}
	return -1
}

func decodeFailure(f jv) *Failure {
	if !f.ok() || f.Type() != tObject {
		return nil
	}
	st, _ := intField(f, "status")
	return &Failure{
		Code:    string(f.GetStringBytes("code")),
		Message: string(f.GetStringBytes("message")),
		Status:  st,
	}
}

func decodeReason(v jv) Reason {
	if !v.ok() {
		return Reason{}
	}
	if v.Type() == tString { // seed dialect: a bare word
		return Reason{Kind: string(v.GetStringBytes())}
	}
	r := Reason{Kind: string(v.GetStringBytes("kind"))}
	switch r.Kind {
	case "aborted":
		r.Cause = string(v.GetStringBytes("reason", "kind"))
		r.HookReason = string(v.GetStringBytes("reason", "reason"))
	case "error":
		r.Failure = decodeFailure(v.Get("error"))
	}
	return r
}

func (d *RowDecoder) decodeFinish(c jv) *Finish {
	reason := c.Get("reason")
	var f *Finish
	if d.arena != nil {
		f = d.arena.finishes.one()
	} else {
		f = new(Finish)
	}
	f.Kind = string(reason.GetStringBytes("kind"))
	f.Failure = decodeFailure(reason.Get("failure"))
	return f
}

// decodeChunk reads a StreamChunk (docs/format.md §9.3) into ch, which must be zero.
func (d *RowDecoder) decodeChunk(ch *Chunk, c jv) {
	if !c.ok() || c.Type() != tObject {
		return
	}
	ch.Type = c.GetStringBytes("type")
	if n, ok := intField(c, "index"); ok {
		ch.Index, ch.HasIndex = n, true
	}
	switch ch.Type {
	case "text-delta", "reasoning-delta":
		ch.DeltaBytes = c.Get("text").unescapedLen()
	case "tool-call-delta":
		ch.ID = string(c.GetStringBytes("id"))
		ch.Name = string(c.GetStringBytes("name"))
		if a := c.Get("argumentsDelta"); a.ok() {
			ch.DeltaBytes = a.unescapedLen()
		} else {
			ch.DeltaBytes = c.Get("arguments").unescapedLen() // seed dialect
		}
	case "usage":
		ch.Usage = d.decodeUsage(c.Get("usage"))
	case "finish":
		ch.Finish = d.decodeFinish(c)
	}
}

// decodeStream summarizes an embedded stream (docs/format.md §5.3).
func (d *RowDecoder) decodeStream(s jv) *Stream {
	var st *Stream
	if d.arena != nil {
		st = d.arena.streams.one()
	} else {
		st = new(Stream)
	}
	at := func(t int64) {
		if !st.HasTimes {
			st.FirstTime, st.LastTime, st.HasTimes = t, t, true
			return
		}
		st.LastTime = t
	}
	s.each(func(rec jv) bool {
		st.Records++
		var r [srMembers]jv
		rec.gather(streamRecordMember, r[:])
		switch r[srType].String() {
		case "text-chunks", "reasoning-chunks", "tool-call-chunks":
			t, _ := intValue(r[srTime0])
			members := r[srTexts]
			if !members.ok() {
				members = r[srArgs]
			}
			dts := s.t.ints[:0]
			r[srDt].each(func(x jv) bool {
				n, _ := x.Int64()
				dts = append(dts, n)
				return true
			})
			s.t.ints = dts[:0]
			k := 0
			members.each(func(m jv) bool {
				if k > 0 && k-1 < len(dts) {
					t += dts[k-1]
				}
				k++
				at(t)
				st.Chunks++
				if !st.HasDelta && m.strLen() > 0 {
					st.FirstDeltaTime, st.HasDelta = t, true
				}
				return true
			})
		case "chunk":
			t, _ := intValue(r[srTime])
			at(t)
			st.Chunks++
			c := r[srChunk]
			switch c.GetStringBytes("type") {
			case "usage":
				st.Usage = d.decodeUsage(c.Get("usage"))
			case "finish":
				st.Finish = d.decodeFinish(c)
			case "text-delta", "reasoning-delta":
				if !st.HasDelta && c.Get("text").strLen() > 0 {
					st.FirstDeltaTime, st.HasDelta = t, true
				}
			case "tool-call-delta":
				if !st.HasDelta && c.Get("argumentsDelta").strLen() > 0 {
					st.FirstDeltaTime, st.HasDelta = t, true
				}
			}
		default: // unknown record: keep its time for timing (docs/format.md §13.5)
			if t, ok := intValue(r[srTime]); ok {
				at(t)
			} else if t, ok := intValue(r[srTime0]); ok {
				at(t)
			}
		}
		return true
	})
	return st
}

// The members of an AssistantStreamRecord that decodeStream reads, found
// in one walk (jv.gather): their indexes, and the key of each.
const (
	srType = iota
	srTime
	srTime0
	srTexts
	srArgs
	srDt
	srChunk
	srMembers
)

func streamRecordMember(key string) int {
	switch key {
	case "type":
		return srType
	case "time":
		return srTime
	case "time0":
		return srTime0
	case "texts":
		return srTexts
	case "args":
		return srArgs
	case "dt":
		return srDt
	case "chunk":
		return srChunk
	}
	return -1
}

// packedKey reports whether a packed row's data may carry key (tool:
// of a tool-call-chunks row).
func packedKey(key string, tool bool) bool {
	switch key {
	case "turn", "step", "index", "dt":
		return true
	case "texts":
		return !tool
	case "id", "name", "args":
		return tool
	}
	return false
}

// decodePacked validates a v0/v1 packed chunk row against its exact schema
// and expands it into its assistant/chunk events (docs/format.md §5.1).
func (d *RowDecoder) decodePacked(r *Row, v jv, typ string) {
	r.Kind = RowPacked
	fail := func(seq int64, msg string) {
		r.Kind = RowInvalid
		r.Events = nil
		r.problem(seq, CodePackedRowInvalid, msg)
	}
	seq0, ok := intField(v, "seq0")
	if !ok || seq0 < 0 {
		fail(-1, typ+" row needs a non-negative integer \"seq0\"")
		return
	}
	if v.GetObject().Len() != 4 || !v.Get("time0").ok() || !v.Get("data").ok() {
		fail(seq0, typ+" row must have exactly the keys type, seq0, time0, data")
		return
	}
	time0, ok := intField(v, "time0")
	if !ok {
		fail(seq0, typ+" row needs an integer \"time0\"")
		return
	}
	data := v.Get("data")
	if data.Type() != tObject {
		fail(seq0, typ+" row data must be an object")
		return
	}
	tool := typ == "tool-call-chunks"
	membersKey := "texts"
	if tool {
		membersKey = "args"
	}
	var extra string
	data.GetObject().Visit(func(k string, _ jv) {
		if extra == "" && !packedKey(k, tool) {
			extra = string(k)
		}
	})
	if extra != "" {
		fail(seq0, fmt.Sprintf("%s row data may not carry %q", typ, extra))
		return
	}
	turnV, stepV := data.get2("turn", "step")
	turn, okT := intValue(turnV)
	step, okS := intValue(stepV)
	index, okI := intField(data, "index")
	if !okT || !okS || !okI {
		fail(seq0, typ+" row data needs integer turn, step and index")
		return
	}
	// The members and dt are checked in place; dt's values are read once
	// into the decoder's scratch. Members and dt entries that pass are
	// leaves (strings, numbers), so their nodes are consecutive: member k
	// is node m0+k.
	members := data.Get(membersKey)
	nMembers := 0
	membersOK := true // every member a string
	m0, mEnd := members.elems()
	for k := m0.i; k < mEnd; k++ {
		if members.t.nodes[k].typ != tString {
			membersOK = false
			break
		}
		nMembers++
	}
	dt := data.Get("dt")
	nDt := 0
	dtOK := true // every entry a safe integer
	dts := data.t.ints[:0]
	for x, end := dt.elems(); x.i < end; x.i++ {
		n, ok := safeInt(x)
		if !ok {
			dtOK = false
			break
		}
		dts = append(dts, n)
		nDt++
	}
	data.t.ints = dts[:0]
	switch {
	case !membersOK:
		fail(seq0+int64(nMembers), fmt.Sprintf("%s member %d is not a string", membersKey, nMembers))
		return
	case nMembers == 0:
		fail(seq0, fmt.Sprintf("%s row needs a non-empty %q array", typ, membersKey))
		return
	case dt.Type() != tArray || (dtOK && nDt != nMembers-1) || (!dtOK && dt.arrayLen() != nMembers-1):
		fail(seq0, fmt.Sprintf("%s row needs \"dt\" with %d entries (members − 1)", typ, nMembers-1))
		return
	case !dtOK:
		fail(seq0+int64(nDt)+1, fmt.Sprintf("dt[%d] is not a safe integer", nDt))
		return
	}
	var id, name string
	if typ == "tool-call-chunks" {
		idv := data.Get("id")
		if !idv.ok() || idv.Type() != tString {
			fail(seq0, "tool-call-chunks row needs a string \"id\"")
			return
		}
		id = idv.GetStringBytes()
		if nv := data.Get("name"); nv.ok() {
			if nv.Type() != tString {
				fail(seq0, "tool-call-chunks row \"name\" must be a string")
				return
			}
			name = nv.GetStringBytes()
		}
	}
	var chunkType string
	switch typ {
	case "text-chunks":
		chunkType = "text-delta"
	case "reasoning-chunks":
		chunkType = "reasoning-delta"
	default:
		chunkType = "tool-call-delta"
	}
	var events []Event
	var chunks []Chunk
	if a := d.arena; a != nil {
		events, chunks = a.events.take(nMembers), a.chunks.take(nMembers)
	} else {
		events, chunks = make([]Event, nMembers), make([]Chunk, nMembers)
	}
	mnodes := members.t.nodes[m0.i : m0.i+uint32(nMembers)]
	t := time0
	for k := range events {
		if k > 0 {
			t += dts[k-1]
			if t > maxSafeInteger || t < -maxSafeInteger {
				fail(seq0+int64(k), "reconstructed time is not a safe integer")
				return
			}
		}
		// Field by field: the rest is zero already.
		c := &chunks[k]
		c.Type, c.Index, c.HasIndex = chunkType, index, true
		c.DeltaBytes = int(mnodes[k].end - mnodes[k].start) // the encoded length: zero only for ""
		if tool {
			c.ID, c.Name = id, name
		}
		e := &events[k]
		e.Row, e.Member, e.Type = r, k, "assistant/chunk"
		e.Seq, e.Time = seq0+int64(k), t
		e.Turn, e.Step, e.HasTurn, e.HasStep = turn, step, true, true
		e.Chunk, e.Detail = c, noDetail
	}
	r.Events = events
}

// safeInt reads a safe integer value (a number without fraction or
// exponent within ±(2^53-1)).
func safeInt(v jv) (int64, bool) {
	n, err := v.Int64()
	if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
		return 0, false
	}
	return n, true
}

// IsSurfaceType reports whether events of type typ are surface events in
// format version v (docs/format.md §6.1).
func IsSurfaceType(typ string, v int) bool {
	switch typ {
	case "user/message", "assistant/message", "tool/result":
		return true
	case "system/message":
		return v >= 3
	case "developer/message":
		return v >= 4
	}
	return false
}
