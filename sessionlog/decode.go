package sessionlog

import (
	"fmt"
	"unicode/utf8"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// Decode decodes one physical row. line is its 1-based line number; b must
// not include the newline and is owned by the returned Row from then on.
// The only error is *UnsupportedVersionError; everything else wrong with a
// row is a Violation in Row.Problems.
func (d *RowDecoder) Decode(b []byte, line int) (*Row, error) {
	d.rows++
	if len(b) > d.maxRowBytes {
		return invalidRow(line, b, CodeRowTooLong, fmt.Sprintf("row of %d bytes exceeds the limit of %d bytes", len(b), d.maxRowBytes)), nil
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
	// A row that parses is valid UTF-8 (Parse checks the strings, JSON has
	// non-ASCII bytes nowhere else); bad UTF-8 anywhere comes first.
	syntax, lossless := t.Parse(b, d.maxDepth, true)
	if syntax != nil && !utf8.Valid(b) {
		return invalidRow(line, b, CodeUTF8Invalid, fmt.Sprintf("row is not valid UTF-8 (first bad byte at offset %d)", firstInvalidUTF8(b))), nil
	}
	if syntax != nil {
		return invalidRow(line, b, jsonCode[syntax.Kind], syntax.Error()), nil
	}
	v := t.Root()
	if v.Type() != jsontape.Object {
		return invalidRow(line, b, CodeRowNotObject, fmt.Sprintf("row is a JSON %s, not an object", v.Type())), nil
	}
	var w wrapping
	var m recordMembers
	m.read(v)
	rec := unwrap(&w, v, &m)
	if !rec.Exists() {
		return w.row(line, b), nil
	}
	if rec != v { // a wrapped record: its own members
		m = recordMembers{}
		m.read(rec)
	}
	r, err := d.decodeRecord(&w, line, b, rec, &m)
	if err == nil && lossless != nil && r.Kind != RowInvalid {
		r.problem(r.FirstSeq(), CodeNotLossless, fmt.Sprintf("%s (byte %d)", lossless.Msg, lossless.Offset))
	}
	return r, err
}

// invalidRow is a row that could not be decoded, for the reason msg.
func invalidRow(line int, b []byte, code, msg string) *Row {
	r := &Row{Line: line, Bytes: b, Kind: RowInvalid}
	r.problem(-1, code, msg)
	return r
}

// jsonCode is the violation code of each rule the JSON tape checks.
var jsonCode = [...]string{
	jsontape.InvalidJSON: CodeJSONInvalid,
	jsontape.InvalidUTF8: CodeUTF8Invalid,
	jsontape.TooDeep:     CodeJSONTooDeep,
	jsontape.NotLossless: CodeNotLossless,
}

// firstInvalidUTF8 is the offset of the first byte of b that is no UTF-8.
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

// decodeRecord decodes a header, packed row or event record into a new
// row (line, b and w's fields filled in).
func (d *RowDecoder) decodeRecord(w *wrapping, line int, b []byte, v jsontape.Value, m *recordMembers) (*Row, error) {
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
