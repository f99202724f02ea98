package sessionlog

import (
	"fmt"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// decodeEnvelope fills e from an event record (docs/format.md §4) and its typed payload.
func (d *RowDecoder) decodeEnvelope(r *Row, e *Event, v jsontape.Value, m *recordMembers) {
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

// envelopeKeyV2 reports whether a v2+ event record may carry key.
func envelopeKeyV2(key string) bool {
	switch key {
	case "type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs":
		return true
	}
	return false
}

// recordMembers holds the members of an event record the decoder reads (the
// first of each name), found in one walk over the record.
type recordMembers struct {
	typ, seq, seq0, time, data, ignorable, surfaceOp, sources jsontape.Value
	// method, id and event are the line wrappers' keys (unwrap); in a
	// record they are extra.
	method, id, event jsontape.Value
	// extra: the record has a key a v2+ envelope may not carry.
	extra bool
}

func (m *recordMembers) read(v jsontape.Value) {
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
