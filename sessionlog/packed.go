package sessionlog

import (
	"fmt"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// decodePacked validates a v0/v1 packed chunk row against its exact schema
// and expands it into its assistant/chunk events (docs/format.md §5.1).
func (d *RowDecoder) decodePacked(r *Row, v jsontape.Value, typ string) {
	p := packedRow{typ: typ, tool: typ == "tool-call-chunks"}
	seq, problem := p.readEnvelope(v)
	if problem == "" {
		seq, problem = p.readData(v.Get("data"))
	}
	if problem == "" {
		seq, problem = d.expand(r, &p)
	}
	if problem != "" {
		r.Kind, r.Events = RowInvalid, nil
		r.problem(seq, CodePackedRowInvalid, problem)
	}
}

// packedRow is what a packed chunk row says, read and checked.
type packedRow struct {
	typ  string // text-chunks, reasoning-chunks or tool-call-chunks
	tool bool   // tool-call-chunks: members are args, with the call's id and name

	seq0, time0, turn, step, index int64
	members                        jsontape.Value // texts or args, all strings
	n                              int            // how many members
	dts                            []int64        // the n-1 time deltas (the tape's scratch)
	id, name                       string
}

// readEnvelope checks the row's own keys, exactly type, seq0, time0 and
// data: it returns the problem and the seq to report it at.
func (p *packedRow) readEnvelope(v jsontape.Value) (seq int64, problem string) {
	var ok bool
	if p.seq0, ok = v.Get("seq0").SafeInt(); !ok || p.seq0 < 0 {
		return -1, p.typ + " row needs a non-negative integer \"seq0\""
	}
	if v.ObjectLen() != 4 || !v.Get("time0").Exists() || !v.Get("data").Exists() {
		return p.seq0, p.typ + " row must have exactly the keys type, seq0, time0, data"
	}
	if p.time0, ok = v.Get("time0").SafeInt(); !ok {
		return p.seq0, p.typ + " row needs an integer \"time0\""
	}
	return p.seq0, ""
}

// readData checks the row's data: only the keys of its type, integer
// turn, step and index, n string members and n-1 safe integer time
// deltas, and a tool call's string id (and name).
func (p *packedRow) readData(data jsontape.Value) (seq int64, problem string) {
	if data.Type() != jsontape.Object {
		return p.seq0, p.typ + " row data must be an object"
	}
	var m [pkMembers]jsontape.Value
	for k, val := range data.Members() { // one walk: the members read, and the first key not allowed
		if x := packedKey(k, p.tool); x < 0 {
			return p.seq0, fmt.Sprintf("%s row data may not carry %q", p.typ, k)
		} else if !m[x].Exists() {
			m[x] = val
		}
	}
	var okT, okS, okI bool
	p.turn, okT = m[pkTurn].SafeInt()
	p.step, okS = m[pkStep].SafeInt()
	if p.index, okI = m[pkIndex].SafeInt(); !okT || !okS || !okI {
		return p.seq0, p.typ + " row data needs integer turn, step and index"
	}
	if seq, problem = p.readMembers(m[pkMembersKey], m[pkDt]); problem != "" || !p.tool {
		return seq, problem
	}
	return p.readCall(m[pkID], m[pkName])
}

// readMembers checks the members (texts or args) and their time deltas,
// reading the deltas once, into the tape's scratch.
func (p *packedRow) readMembers(members, dt jsontape.Value) (seq int64, problem string) {
	key := "texts"
	if p.tool {
		key = "args"
	}
	p.members = members
	stringsOnly := true
	for m := range members.Elements() {
		if m.Type() != jsontape.String {
			stringsOnly = false
			break
		}
		p.n++
	}
	dts, dtOK := dt.SafeInts() // dtOK: every entry a safe integer
	p.dts = dts
	switch {
	case !stringsOnly:
		return p.seq0 + int64(p.n), fmt.Sprintf("%s member %d is not a string", key, p.n)
	case p.n == 0:
		return p.seq0, fmt.Sprintf("%s row needs a non-empty %q array", p.typ, key)
	case dt.Type() != jsontape.Array || (dtOK && len(dts) != p.n-1) || (!dtOK && dt.ArrayLen() != p.n-1):
		return p.seq0, fmt.Sprintf("%s row needs \"dt\" with %d entries (members − 1)", p.typ, p.n-1)
	case !dtOK:
		return p.seq0 + int64(len(dts)) + 1, fmt.Sprintf("dt[%d] is not a safe integer", len(dts))
	}
	return p.seq0, ""
}

// readCall checks a tool-call-chunks row's call: a string id and, when
// present, a string name.
func (p *packedRow) readCall(id, name jsontape.Value) (seq int64, problem string) {
	if !id.Exists() || id.Type() != jsontape.String {
		return p.seq0, "tool-call-chunks row needs a string \"id\""
	}
	p.id = id.String()
	if name.Exists() {
		if name.Type() != jsontape.String {
			return p.seq0, "tool-call-chunks row \"name\" must be a string"
		}
		p.name = name.String()
	}
	return p.seq0, ""
}

// expand makes the row's events, one assistant/chunk per member, at times
// time0 + the deltas so far; a time outside the safe integers is the
// problem of its member.
func (d *RowDecoder) expand(r *Row, p *packedRow) (seq int64, problem string) {
	chunkType := "tool-call-delta"
	switch p.typ {
	case "text-chunks":
		chunkType = "text-delta"
	case "reasoning-chunks":
		chunkType = "reasoning-delta"
	}
	var events []Event
	var chunks []Chunk
	if a := d.arena; a != nil {
		events, chunks = a.events.take(p.n), a.chunks.take(p.n)
	} else {
		events, chunks = make([]Event, p.n), make([]Chunk, p.n)
	}
	t, k := p.time0, 0
	for m := range p.members.Elements() {
		if k > 0 {
			if t += p.dts[k-1]; t > jsontape.MaxSafeInteger || t < -jsontape.MaxSafeInteger {
				break // no return from a range over a function: it costs on every turn
			}
		}
		// Field by field: the rest is zero already.
		c := &chunks[k]
		c.Type, c.Index, c.HasIndex = chunkType, p.index, true
		c.DeltaBytes = m.EncodedLen() // zero only for ""
		if p.tool {
			c.ID, c.Name = p.id, p.name
		}
		e := &events[k]
		e.Row, e.Member, e.Type = r, k, "assistant/chunk"
		e.Seq, e.Time = p.seq0+int64(k), t
		e.Turn, e.Step, e.HasTurn, e.HasStep = p.turn, p.step, true, true
		e.Chunk, e.Detail = c, noDetail
		k++
	}
	if k < p.n {
		return p.seq0 + int64(k), "reconstructed time is not a safe integer"
	}
	r.Kind, r.Events = RowPacked, events
	return p.seq0, ""
}

// The members of a packed row's data, all of which decodePacked reads:
// their indexes (packedKey).
const (
	pkTurn = iota
	pkStep
	pkIndex
	pkMembersKey // texts, or args for tool-call-chunks
	pkDt
	pkID
	pkName
	pkMembers
)

// packedKey is the index of a packed row's data key, -1 for a key the
// row may not carry (tool: of a tool-call-chunks row).
func packedKey(key string, tool bool) int {
	switch key {
	case "turn":
		return pkTurn
	case "step":
		return pkStep
	case "index":
		return pkIndex
	case "dt":
		return pkDt
	case "texts":
		if !tool {
			return pkMembersKey
		}
	case "args":
		if tool {
			return pkMembersKey
		}
	case "id":
		if tool {
			return pkID
		}
	case "name":
		if tool {
			return pkName
		}
	}
	return -1
}
