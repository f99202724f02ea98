package sessionlog

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// Default limits.
const (
	// DefaultMaxRowBytes is the longest row accepted (4 MiB), as dsh's own
	// OTLP export rejects larger records.
	DefaultMaxRowBytes = 4 << 20
	// DefaultMaxDepth is the deepest JSON nesting accepted. Real rows stay
	// far below it (a tool's JSON schema is the deepest thing dsh writes).
	DefaultMaxDepth = 128
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
			t = jsontape.Get()
			defer jsontape.Put(t)
		}
	}
	// A row that parses is valid UTF-8 (parse checks the strings, JSON has
	// non-ASCII bytes nowhere else); bad UTF-8 anywhere comes first.
	syntax, lossless := t.Parse(b, d.maxDepth, true)
	if syntax != nil {
		if !utf8.Valid(b) {
			return invalid(CodeUTF8Invalid, fmt.Sprintf("row is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(b)))
		}
		return invalid(jsonCode[syntax.Kind], syntax.Error())
	}
	v := t.Root()
	if v.Type() != jsontape.Object {
		return invalid(CodeRowNotObject, fmt.Sprintf("row is a JSON %s, not an object", v.Type()))
	}
	var w wrapping
	var m record
	m.read(v)
	env := unwrap(&w, v, &m)
	if !env.Exists() {
		r := &Row{Kind: w.kind}
		w.fill(r, line, b)
		if w.problem != "" {
			r.problem(-1, CodeWrapperInvalid, w.problem)
		}
		return r, nil
	}
	if env != v { // a wrapped record: its own members
		m = record{}
		m.read(env)
	}
	r, err := d.decodeRecord(&w, line, b, env, &m)
	if err != nil {
		return r, err
	}
	if lossless != nil && r.Kind != RowInvalid {
		r.problem(r.FirstSeq(), CodeNotLossless, fmt.Sprintf("%s (byte %d)", lossless.Msg, lossless.Offset))
	}
	return r, nil
}

func (r *Row) problem(seq int64, code, msg string) {
	r.Problems = append(r.Problems, Violation{Line: r.Line, Seq: seq, Code: code, Message: msg})
}

// jsonCode is the violation code of each rule the JSON tape checks.
var jsonCode = [...]string{
	jsontape.InvalidJSON: CodeJSONInvalid,
	jsontape.InvalidUTF8: CodeUTF8Invalid,
	jsontape.TooDeep:     CodeJSONTooDeep,
	jsontape.NotLossless: CodeNotLossless,
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
func unwrap(w *wrapping, v jsontape.Value, m *record) jsontape.Value {
	// The first member of each name, from the walk of the row m is.
	typ, method, id, event := m.typ, m.method, m.id, m.event
	if method.Exists() && !typ.Exists() {
		w.wrapper = WrapJSONRPC
		w.method = method.String()
		params := v.Get("params")
		if params.Exists() {
			w.sessionID = params.GetString("sessionId")
		}
		if w.method != "session.event" {
			w.kind = RowOther
			return jsontape.Value{}
		}
		ev := params.Get("event")
		if w.sessionID == "" || !ev.Exists() || ev.Type() != jsontape.Object {
			w.kind = RowInvalid
			w.problem = "session.event notification needs params.sessionId (string) and params.event (object)"
			return jsontape.Value{}
		}
		return ev
	}
	if !method.Exists() && id.Exists() && !typ.Exists() && !event.Exists() {
		// A JSON-RPC response or request without a method we track.
		w.wrapper = WrapJSONRPC
		w.kind = RowOther
		return jsontape.Value{}
	}
	switch t := typ.String(); t {
	case "session_event":
		w.wrapper = WrapStreamJSON
		w.method = t
		w.sessionID = v.GetString("sessionId")
		if w.sessionID == "" || !event.Exists() || event.Type() != jsontape.Object {
			w.kind = RowInvalid
			w.problem = "session_event line needs sessionId (string) and event (object)"
			return jsontape.Value{}
		}
		return event
	case "result":
		w.wrapper = WrapStreamJSON
		w.method = t
		w.sessionID = v.GetString("sessionId")
		w.kind = RowOther
		return jsontape.Value{}
	}
	if !typ.Exists() && event.Exists() {
		w.wrapper = WrapEnvelope
		w.sessionID = v.GetString("sessionId")
		if w.sessionID == "" || event.Type() != jsontape.Object {
			w.kind = RowInvalid
			w.problem = "{sessionId, event} line needs sessionId (string) and event (object)"
			return jsontape.Value{}
		}
		return event
	}
	return v
}

// decodeRecord decodes a header, packed row or event record into a new
// row (line, b and w's fields filled in).
func (d *RowDecoder) decodeRecord(w *wrapping, line int, b []byte, v jsontape.Value, m *record) (*Row, error) {
	tv := m.typ
	if !tv.Exists() || tv.Type() != jsontape.String {
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
		if m.seq0.Exists() || !m.seq.Exists() {
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
	typ, seq, seq0, time, data, ignorable, surfaceOp, sources jsontape.Value
	// method, id and event are the line wrappers' keys (unwrap); in a
	// record they are extra.
	method, id, event jsontape.Value
	// extra: the record has a key a v2+ envelope may not carry.
	extra bool
}

func (m *record) read(v jsontape.Value) {
	for key, val := range v.Members() {
		var slot *jsontape.Value
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
		if !slot.Exists() {
			*slot = val
		}
	}
}

func seqOf(v jsontape.Value) int64 {
	if s := v.Get("seq"); s.Exists() {
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

func (d *RowDecoder) decodeHeader(r *Row, v jsontape.Value) error {
	r.Kind = RowHeader
	h := &Header{}
	r.Header = h
	if d.rows != 1 {
		r.problem(-1, CodeHeaderMisplaced, "a session header may only be the first row")
	}
	if vv := v.Get("version"); vv.Exists() {
		n, err := vv.Int()
		if err != nil || n < 0 || n > 4 {
			return &UnsupportedVersionError{Line: r.Line, Version: string(vv.Raw())}
		}
		h.Version, h.HasVersion = n, true
	}
	bad := func(msg string) { r.problem(-1, CodeHeaderInvalid, msg) }
	// The header outlives its row (Decoder.Header, RowDecoder.Header): its
	// strings are copies, not views of memory a ReuseRows Decoder or an
	// arena's caller reuses.
	h.ID = strings.Clone(v.GetString("id"))
	if h.ID == "" {
		bad("header needs a non-empty string \"id\"")
	}
	r.SessionID = h.ID
	if n, ok := v.Get("createdAt").SafeInt(); ok {
		h.CreatedAt = n
	} else {
		bad("header needs an integer \"createdAt\"")
	}
	if n, ok := v.Get("delegationDepth").SafeInt(); ok {
		h.DelegationDepth = n
	} else if h.Version >= 2 {
		// Required on disk by the format, but early v0 writers omitted it.
		bad("header needs an integer \"delegationDepth\"")
	}
	h.Cwd = strings.Clone(v.GetString("cwd"))
	h.ParentSession = strings.Clone(v.GetString("parentSession"))
	h.Origin = strings.Clone(v.GetString("origin"))
	h.AgentPreset = strings.Clone(v.GetString("agentPreset"))
	if n, ok := v.Get("seedLength").SafeInt(); ok {
		h.SeedLength, h.HasSeedLength = n, true
	}
	if b := v.Get("isSeeded"); b.Exists() {
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
		for k := range v.Members() {
			if !headerKeysV2[k] {
				bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
			}
		}
	} else {
		for _, k := range []string{"sandboxMode", "approvalPolicy"} {
			if v.Get(k).Exists() {
				bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
			}
		}
	}
	d.header = h
	d.format = Format{Version: h.Version, Known: true, FromHeader: true}
	return nil
}

// envelopeKeyV2 reports whether a v2+ event record may carry key.
func envelopeKeyV2(key string) bool {
	switch key {
	case "type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs":
		return true
	}
	return false
}

// decodeEnvelope fills e from an event record (docs/format.md §4) and its typed payload.
func (d *RowDecoder) decodeEnvelope(r *Row, e *Event, v jsontape.Value, m *record) {
	e.Seq = -1
	if n, ok := m.seq.SafeInt(); ok && n >= 0 {
		e.Seq = n
	} else {
		r.Kind = RowInvalid
		r.Events = nil
		r.problem(-1, CodeEnvelopeInvalid, fmt.Sprintf("%s event has no non-negative integer \"seq\"", e.Type))
		return
	}
	if n, ok := m.time.SafeInt(); ok {
		e.Time = n
	} else {
		r.problem(e.Seq, CodeEnvelopeInvalid, fmt.Sprintf("%s event has no integer \"time\"", e.Type))
	}
	if ig := m.ignorable; ig.Exists() {
		if ig.Type() != jsontape.True {
			r.problem(e.Seq, CodeEnvelopeInvalid, "\"ignorable\" may only be the literal true")
		}
		e.Ignorable = true
	}
	data := m.data
	if !data.Exists() {
		r.problem(e.Seq, CodeEnvelopeInvalid, fmt.Sprintf("%s event has no \"data\"", e.Type))
	}
	if m.extra && d.format.RulesVersion() >= 2 {
		for k := range v.Members() {
			if !envelopeKeyV2(k) {
				r.problem(e.Seq, CodeEnvelopeExtraKeys, fmt.Sprintf("the v2+ envelope is closed; %q is not allowed", k))
			}
		}
	}
	if op := m.surfaceOp; op.Exists() {
		d.decodeSurfaceOp(r, e, op)
	}
	if src := m.sources; src.Exists() {
		d.decodeSources(r, e, src)
	}
	if data.Exists() && data.Type() == jsontape.Object {
		d.decodeData(r, e, data)
	}
}

func (d *RowDecoder) decodeSurfaceOp(r *Row, e *Event, op jsontape.Value) {
	if op.Type() == jsontape.String {
		if string(op.GetString()) == "append" {
			e.Surface.Kind = SurfaceAppend
			return
		}
		e.Surface.Kind = SurfaceInvalid
		r.problem(e.Seq, CodeSurfaceOpInvalid, fmt.Sprintf("unknown surfaceOp %s", op.Raw()))
		return
	}
	if op.Type() == jsontape.Object && string(op.GetString("op")) == "replace" {
		members := op.ObjectLen()
		a, okA := op.Get("startSeq").SafeInt()
		b, okB := op.Get("endSeq").SafeInt()
		if okA && okB && members == 3 {
			e.Surface = SurfaceOp{Kind: SurfaceReplace, Start: a, End: b, SeqKeys: true}
			d.evidence(3, false)
			return
		}
		a, okA = op.Get("start").SafeInt()
		b, okB = op.Get("end").SafeInt()
		if okA && okB && members == 3 {
			e.Surface = SurfaceOp{Kind: SurfaceReplace, Start: a, End: b}
			return
		}
	}
	e.Surface.Kind = SurfaceInvalid
	r.problem(e.Seq, CodeSurfaceOpInvalid, fmt.Sprintf("surfaceOp %s is neither \"append\" nor {op:\"replace\", start/end or startSeq/endSeq}", op.Raw()))
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
func sourcesLen(src jsontape.Value, seq int64) int {
	n := 0
	for el := range src.Elements() {
		if n >= maxSourceSeqs {
			break
		}
		if el.Type() == jsontape.Array {
			if first, last, ok := sourceRange(el); ok && first >= 0 && first <= last && last-first < maxSourceSeqs &&
				(seq < 0 || last < seq) {
				n += int(last - first + 1)
				continue
			}
		}
		n++
	}
	return min(n, maxSourceSeqs)
}

// sourceRange reads a [first, last] pair of integers.
func sourceRange(el jsontape.Value) (first, last int64, ok bool) {
	a, b, ok := el.Pair()
	if !ok {
		return 0, 0, false
	}
	first, err1 := a.Int64()
	last, err2 := b.Int64()
	return first, last, err1 == nil && err2 == nil
}

// decodeSources expands sourceEventSeqs (docs/format.md §5.2) and checks the rules that
// need nothing but the event itself.
func (d *RowDecoder) decodeSources(r *Row, e *Event, src jsontape.Value) {
	e.HasSources = true
	if src.Type() != jsontape.Array {
		r.problem(e.Seq, CodeSourcesInvalid, "sourceEventSeqs must be an array")
		return
	}
	var problem string
	bad := func(format string, args ...any) {
		problem = fmt.Sprintf(format, args...)
	}
	var out []int64
	if n := sourcesLen(src, e.Seq); d.arena != nil {
		out = d.arena.seqs.take(n)[:0]
	} else {
		out = make([]int64, 0, n)
	}
	for el := range src.Elements() {
		switch el.Type() {
		case jsontape.Number:
			n, err := el.Int64()
			if err != nil || n < 0 || n > jsontape.MaxSafeInteger {
				bad("sourceEventSeqs element %s is not a seq", el.Raw())
				break
			}
			out = append(out, n)
		case jsontape.Array:
			first, last, ok := sourceRange(el)
			if !ok {
				bad("sourceEventSeqs range %s must be [first, last] integers", el.Raw())
				break
			}
			if first < 0 || first > last {
				bad("sourceEventSeqs range %s needs integers first ≤ last", el.Raw())
				break
			}
			if e.Seq >= 0 && last >= e.Seq {
				bad("sourceEventSeqs range %s reaches seq %d, not earlier than the event", el.Raw(), last)
				break
			}
			if last-first+1 > int64(maxSourceSeqs-len(out)) {
				bad("sourceEventSeqs expands to more than %d seqs", maxSourceSeqs)
				break
			}
			e.SourcesRanged = true
			for n := first; n <= last; n++ {
				out = append(out, n)
			}
		default:
			bad("sourceEventSeqs element %s is neither a seq nor a [first, last] range", el.Raw())
			break
		}
		if problem != "" {
			break
		}
	}
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
func (d *RowDecoder) decodeData(r *Row, e *Event, data jsontape.Value) {
	turn, step := data.Get2("turn", "step")
	if n, ok := turn.SafeInt(); ok {
		e.Turn, e.HasTurn = n, true
	}
	if n, ok := step.SafeInt(); ok {
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
			if c.Type() == jsontape.Object {
				e.Chunk.Type = c.GetString("type")
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
func (d *RowDecoder) decodePlacement(e *Event, data jsontape.Value) {
	switch e.Type {
	case "turn/end":
		if r := data.Get("reason"); r.Type() == jsontape.String {
			e.Reason.Kind = r.String()
		} else {
			e.Reason.Kind = r.GetString("kind")
		}
		if e.Reason.Kind == "forked" {
			d.evidence(4, false)
		}
	case "tool/call", "approval/asked":
		e.CallID = data.GetString("callId")
		if e.Type == "tool/call" {
			e.ToolName = data.GetString("name")
		} else {
			e.ToolName = data.GetString("toolName")
		}
	case "tool/result":
		d.decodeToolResult(e, data)
	case "user/message":
		if !data.Get("id").Exists() {
			d.evidence(0, true)
		}
	case "system/message":
		d.evidence(3, false)
	case "developer/message":
		d.evidence(4, false)
	case "assistant/message":
		msg := d.messageOf(data)
		for b := range msg.Get("content").Elements() {
			if b.GetString("type") == "tool_use" {
				d.evidence(0, true)
				break
			}
		}
		if data.Get("stream").Exists() {
			d.evidence(2, false)
			e.Stream = shallowStream
		}
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		e.SubCallID = data.GetString("subCallId")
		e.CallID = data.GetString("parentCallId")
		e.ToolName = data.GetString("name")
	}
}

// decodeDetail reads the fields of e.Detail, which is the event's own
// (hasDetail(e.Type)).
func (d *RowDecoder) decodeDetail(e *Event, data jsontape.Value) {
	switch e.Type {
	case "turn/end":
		e.Reason = decodeReason(data.Get("reason"))
		if e.Reason.Kind == "forked" {
			d.evidence(4, false)
		}
	case "tool/call":
		e.CallID = string(data.GetString("callId"))
		e.ToolName = string(data.GetString("name"))
		e.Arguments = string(data.GetString("arguments"))
	case "tool/result":
		d.decodeToolResult(e, data)
	case "user/message":
		var m [rmMembers]jsontape.Value
		data.Gather(resultMessageMember, m[:])
		e.Role = m[rmRole].String()
		e.MessageID = m[rmID].String()
		e.SourceKind = m[rmSource].Get("kind").String()
		e.ContentEmpty = m[rmContent].ArrayLen() == 0
		if !m[rmID].Exists() {
			d.evidence(0, true)
		}
	case "system/message", "developer/message":
		var m [rmMembers]jsontape.Value
		data.Get("message").Gather(resultMessageMember, m[:])
		e.Role = m[rmRole].String()
		e.MessageID = m[rmID].String()
		e.SourceKind = m[rmSource].Get("kind").String()
		e.ContentEmpty = m[rmContent].ArrayLen() == 0
		if e.Type == "developer/message" {
			d.evidence(4, false)
		} else {
			d.evidence(3, false)
		}
	case "assistant/message":
		d.decodeAssistantMessage(e, data)
	case "request/header":
		e.HasSystem = data.Get("header", "system").Exists()
		e.Provider = string(data.GetString("header", "config", "provider"))
		e.Model = string(data.GetString("header", "config", "model"))
	case "request/context":
		e.Provider = string(data.GetString("provider"))
		e.Model = string(data.GetString("model"))
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		e.SubCallID = string(data.GetString("subCallId"))
		e.CallID = string(data.GetString("parentCallId"))
		e.RootCallID = string(data.GetString("rootCallId"))
		e.ToolName = string(data.GetString("name"))
		e.IsError = data.GetBool("isError")
		e.ErrorCode = string(data.GetString("error", "code"))
	case "llm/retry":
		e.Provider = string(data.GetString("provider"))
		if n, ok := data.Get("retry").SafeInt(); ok {
			e.Retry = n
		}
		e.Failure = decodeFailure(data.Get("failure"))
	case "llm/retry-started":
		if n, ok := data.Get("retry").SafeInt(); ok {
			e.Retry = n
		}
	case "session/end-seed":
		e.Inherited = data.GetBool("inherited")
	case "approval/asked":
		e.CallID = string(data.GetString("callId"))
		e.ToolName = string(data.GetString("toolName"))
	}
}

// messageOf is data.message, or data itself for the earliest v0 writers,
// which put the message's fields (content, callId, …) straight into data.
func (d *RowDecoder) messageOf(data jsontape.Value) jsontape.Value {
	if m := data.Get("message"); m.Exists() {
		return m
	}
	return data
}

func (d *RowDecoder) decodeToolResult(e *Event, data jsontape.Value) {
	msg := d.messageOf(data)
	var m [rmMembers]jsontape.Value
	msg.Gather(resultMessageMember, m[:])
	e.Role = m[rmRole].String()
	e.MessageID = m[rmID].String()
	srcKind, srcCallID := m[rmSource].Get2("kind", "callId")
	e.SourceKind = srcKind.String()
	e.SyntheticResult = strings.HasPrefix(e.MessageID, "interrupted-tool-result-")
	// Call id, first of: toolCallId, source.callId, the tool-result block (docs/format.md §13.3).
	block := m[rmContent].Get("0")
	switch {
	case m[rmToolCallID].Exists():
		e.CallID = m[rmToolCallID].String()
		if e.Role == "tool" {
			d.evidence(4, false)
		}
	case srcCallID.Exists():
		e.CallID = srcCallID.String()
	case m[rmCallID].Exists():
		e.CallID = m[rmCallID].String()
	case block.Exists() && block.GetString("type") == "tool-result":
		e.CallID = block.GetString("toolCallId")
	}
	// Error flag (docs/format.md §13.4).
	dataErr := data.Get("error")
	switch {
	case m[rmIsError].Exists():
		e.IsError = m[rmIsError].Type() == jsontape.True
	case block.Exists() && block.Get("isError").Exists():
		e.IsError = block.GetBool("isError")
	default:
		e.IsError = dataErr.Exists()
	}
	e.ErrorCode = dataErr.GetString("code")
	e.HasErrorDetail = dataErr.Exists()
	if m[rmToolName].Exists() {
		e.ToolName = m[rmToolName].String()
		d.evidence(0, true)
	}
	if m[rmContent].Type() == jsontape.String {
		d.evidence(0, true)
	}
}

// The members of a message that the decoder reads (all of them for a tool
// result's; role, id, source and content for the other messages), found
// in one walk (jsontape.Value.gather): their indexes, and the key of each.
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

func (d *RowDecoder) decodeAssistantMessage(e *Event, data jsontape.Value) {
	var m [rmMembers]jsontape.Value
	d.messageOf(data).Gather(resultMessageMember, m[:])
	e.Role = m[rmRole].String()
	e.MessageID = m[rmID].String()
	var src [smMembers]jsontape.Value
	m[rmSource].Gather(sourceMember, src[:])
	e.SourceKind = src[smKind].String()
	e.Provider = src[smProvider].String()
	e.Model = src[smModel].String()
	content := m[rmContent]
	e.ContentEmpty = content.ArrayLen() == 0
	for b := range content.Elements() {
		switch string(b.GetString("type")) {
		case "tool-call":
			e.Advertised = append(e.Advertised, ToolCallRef{
				ID:        string(b.GetString("id")),
				Name:      string(b.GetString("name")),
				Arguments: string(b.GetString("arguments")),
			})
		case "tool_use":
			d.evidence(0, true)
			var args string
			if in := b.Get("input"); in.Exists() {
				args = string(in.Raw())
			}
			e.Advertised = append(e.Advertised, ToolCallRef{
				ID:        string(b.GetString("id")),
				Name:      string(b.GetString("name")),
				Arguments: args,
			})
		}
	}
	e.Usage = d.decodeUsage(data.Get("usage"))
	e.Interrupted = data.GetBool("interrupted")
	if s := data.Get("stream"); s.Exists() {
		d.evidence(2, false)
		e.Stream = d.decodeStream(s)
	}
}

func (d *RowDecoder) decodeUsage(u jsontape.Value) *Usage {
	if !u.Exists() || u.Type() != jsontape.Object {
		return nil
	}
	var out *Usage
	if d.arena != nil {
		out = d.arena.usages.one()
	} else {
		out = new(Usage)
	}
	// One walk over the members, not one lookup per count.
	var m [6]jsontape.Value
	u.Gather(usageMember, m[:])
	for x, dst := range [...]*int64{&out.InputTokens, &out.OutputTokens, &out.TotalTokens,
		&out.CacheReadTokens, &out.CacheWriteTokens, &out.ReasoningTokens} {
		*dst, _ = m[x].SafeInt()
	}
	return out
}

// The members of a message's source that decodeAssistantMessage reads,
// found in one walk (jsontape.Value.gather).
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

func decodeFailure(f jsontape.Value) *Failure {
	if !f.Exists() || f.Type() != jsontape.Object {
		return nil
	}
	st, _ := f.Get("status").SafeInt()
	return &Failure{
		Code:    string(f.GetString("code")),
		Message: string(f.GetString("message")),
		Status:  st,
	}
}

func decodeReason(v jsontape.Value) Reason {
	if !v.Exists() {
		return Reason{}
	}
	if v.Type() == jsontape.String { // seed dialect: a bare word
		return Reason{Kind: string(v.GetString())}
	}
	r := Reason{Kind: string(v.GetString("kind"))}
	switch r.Kind {
	case "aborted":
		r.Cause = string(v.GetString("reason", "kind"))
		r.HookReason = string(v.GetString("reason", "reason"))
	case "error":
		r.Failure = decodeFailure(v.Get("error"))
	}
	return r
}

func (d *RowDecoder) decodeFinish(c jsontape.Value) *Finish {
	reason := c.Get("reason")
	var f *Finish
	if d.arena != nil {
		f = d.arena.finishes.one()
	} else {
		f = new(Finish)
	}
	f.Kind = string(reason.GetString("kind"))
	f.Failure = decodeFailure(reason.Get("failure"))
	return f
}

// decodeChunk reads a StreamChunk (docs/format.md §9.3) into ch, which must be zero.
func (d *RowDecoder) decodeChunk(ch *Chunk, c jsontape.Value) {
	if !c.Exists() || c.Type() != jsontape.Object {
		return
	}
	ch.Type = c.GetString("type")
	if n, ok := c.Get("index").SafeInt(); ok {
		ch.Index, ch.HasIndex = n, true
	}
	switch ch.Type {
	case "text-delta", "reasoning-delta":
		ch.DeltaBytes = c.Get("text").UnescapedLen()
	case "tool-call-delta":
		ch.ID = string(c.GetString("id"))
		ch.Name = string(c.GetString("name"))
		if a := c.Get("argumentsDelta"); a.Exists() {
			ch.DeltaBytes = a.UnescapedLen()
		} else {
			ch.DeltaBytes = c.Get("arguments").UnescapedLen() // seed dialect
		}
	case "usage":
		ch.Usage = d.decodeUsage(c.Get("usage"))
	case "finish":
		ch.Finish = d.decodeFinish(c)
	}
}

// decodeStream summarizes an embedded stream (docs/format.md §5.3).
func (d *RowDecoder) decodeStream(s jsontape.Value) *Stream {
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
	for rec := range s.Elements() {
		st.Records++
		var r [srMembers]jsontape.Value
		rec.Gather(streamRecordMember, r[:])
		switch r[srType].String() {
		case "text-chunks", "reasoning-chunks", "tool-call-chunks":
			t, _ := r[srTime0].SafeInt()
			members := r[srTexts]
			if !members.Exists() {
				members = r[srArgs]
			}
			dts := r[srDt].Ints()
			k := 0
			for m := range members.Elements() {
				if k > 0 && k-1 < len(dts) {
					t += dts[k-1]
				}
				k++
				at(t)
				st.Chunks++
				if !st.HasDelta && m.EncodedLen() > 0 {
					st.FirstDeltaTime, st.HasDelta = t, true
				}
			}
		case "chunk":
			t, _ := r[srTime].SafeInt()
			at(t)
			st.Chunks++
			c := r[srChunk]
			switch c.GetString("type") {
			case "usage":
				st.Usage = d.decodeUsage(c.Get("usage"))
			case "finish":
				st.Finish = d.decodeFinish(c)
			case "text-delta", "reasoning-delta":
				if !st.HasDelta && c.Get("text").EncodedLen() > 0 {
					st.FirstDeltaTime, st.HasDelta = t, true
				}
			case "tool-call-delta":
				if !st.HasDelta && c.Get("argumentsDelta").EncodedLen() > 0 {
					st.FirstDeltaTime, st.HasDelta = t, true
				}
			}
		default: // unknown record: keep its time for timing (docs/format.md §13.5)
			if t, ok := r[srTime].SafeInt(); ok {
				at(t)
			} else if t, ok := r[srTime0].SafeInt(); ok {
				at(t)
			}
		}
	}
	return st
}

// The members of an AssistantStreamRecord that decodeStream reads, found
// in one walk (jsontape.Value.gather): their indexes, and the key of each.
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
func (d *RowDecoder) decodePacked(r *Row, v jsontape.Value, typ string) {
	r.Kind = RowPacked
	fail := func(seq int64, msg string) {
		r.Kind = RowInvalid
		r.Events = nil
		r.problem(seq, CodePackedRowInvalid, msg)
	}
	seq0, ok := v.Get("seq0").SafeInt()
	if !ok || seq0 < 0 {
		fail(-1, typ+" row needs a non-negative integer \"seq0\"")
		return
	}
	if v.ObjectLen() != 4 || !v.Get("time0").Exists() || !v.Get("data").Exists() {
		fail(seq0, typ+" row must have exactly the keys type, seq0, time0, data")
		return
	}
	time0, ok := v.Get("time0").SafeInt()
	if !ok {
		fail(seq0, typ+" row needs an integer \"time0\"")
		return
	}
	data := v.Get("data")
	if data.Type() != jsontape.Object {
		fail(seq0, typ+" row data must be an object")
		return
	}
	tool := typ == "tool-call-chunks"
	membersKey := "texts"
	if tool {
		membersKey = "args"
	}
	var extra string
	for k := range data.Members() {
		if extra == "" && !packedKey(k, tool) {
			extra = k
		}
	}
	if extra != "" {
		fail(seq0, fmt.Sprintf("%s row data may not carry %q", typ, extra))
		return
	}
	turnV, stepV := data.Get2("turn", "step")
	turn, okT := turnV.SafeInt()
	step, okS := stepV.SafeInt()
	index, okI := data.Get("index").SafeInt()
	if !okT || !okS || !okI {
		fail(seq0, typ+" row data needs integer turn, step and index")
		return
	}
	// The members and dt are checked in place; dt's values are read once
	// into the tape's scratch.
	members := data.Get(membersKey)
	nMembers := 0
	membersOK := true // every member a string
	for m := range members.Elements() {
		if m.Type() != jsontape.String {
			membersOK = false
			break
		}
		nMembers++
	}
	dt := data.Get("dt")
	dts, dtOK := dt.SafeInts() // dtOK: every entry a safe integer
	nDt := len(dts)
	switch {
	case !membersOK:
		fail(seq0+int64(nMembers), fmt.Sprintf("%s member %d is not a string", membersKey, nMembers))
		return
	case nMembers == 0:
		fail(seq0, fmt.Sprintf("%s row needs a non-empty %q array", typ, membersKey))
		return
	case dt.Type() != jsontape.Array || (dtOK && nDt != nMembers-1) || (!dtOK && dt.ArrayLen() != nMembers-1):
		fail(seq0, fmt.Sprintf("%s row needs \"dt\" with %d entries (members − 1)", typ, nMembers-1))
		return
	case !dtOK:
		fail(seq0+int64(nDt)+1, fmt.Sprintf("dt[%d] is not a safe integer", nDt))
		return
	}
	var id, name string
	if typ == "tool-call-chunks" {
		idv := data.Get("id")
		if !idv.Exists() || idv.Type() != jsontape.String {
			fail(seq0, "tool-call-chunks row needs a string \"id\"")
			return
		}
		id = idv.GetString()
		if nv := data.Get("name"); nv.Exists() {
			if nv.Type() != jsontape.String {
				fail(seq0, "tool-call-chunks row \"name\" must be a string")
				return
			}
			name = nv.GetString()
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
	t, k := time0, 0
	for m := range members.Elements() {
		if k > 0 {
			t += dts[k-1]
			if t > jsontape.MaxSafeInteger || t < -jsontape.MaxSafeInteger {
				fail(seq0+int64(k), "reconstructed time is not a safe integer")
				return
			}
		}
		// Field by field: the rest is zero already.
		c := &chunks[k]
		c.Type, c.Index, c.HasIndex = chunkType, index, true
		c.DeltaBytes = m.EncodedLen() // zero only for ""
		if tool {
			c.ID, c.Name = id, name
		}
		e := &events[k]
		e.Row, e.Member, e.Type = r, k, "assistant/chunk"
		e.Seq, e.Time = seq0+int64(k), t
		e.Turn, e.Step, e.HasTurn, e.HasStep = turn, step, true, true
		e.Chunk, e.Detail = c, noDetail
		k++
	}
	r.Events = events
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
