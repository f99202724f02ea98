package sessionlog

import (
	"fmt"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

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
