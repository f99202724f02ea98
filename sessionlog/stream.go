package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

// decodeStream summarizes an embedded stream (docs/format.md §5.3): its
// records and the chunks they stand for, their times, the time of the
// first non-empty delta, and the usage and finish chunks.
func (d *RowDecoder) decodeStream(s jsontape.Value) *Stream {
	var st *Stream
	if d.arena != nil {
		st = d.arena.streams.one()
	} else {
		st = new(Stream)
	}
	for rec := range s.Elements() {
		st.Records++
		var r streamRecord
		rec.Gather(streamRecordMember, r[:])
		switch r[srType].String() {
		case "text-chunks", "reasoning-chunks", "tool-call-chunks":
			st.addPacked(&r)
		case "chunk":
			d.addChunk(st, &r)
		default: // unknown record: keep its time for timing (docs/format.md §13.5)
			if t, ok := r[srTime].SafeInt(); ok {
				st.timed(t)
			} else if t, ok := r[srTime0].SafeInt(); ok {
				st.timed(t)
			}
		}
	}
	return st
}

// streamRecord is the members of an AssistantStreamRecord that
// decodeStream reads, by their indexes (streamRecordMember).
type streamRecord [srMembers]jsontape.Value

// addPacked adds the chunks of a packed record: one per member, at time0
// plus the deltas so far.
func (st *Stream) addPacked(r *streamRecord) {
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
		st.timed(t)
		st.Chunks++
		if !st.HasDelta && m.EncodedLen() > 0 {
			st.FirstDeltaTime, st.HasDelta = t, true
		}
	}
}

// addChunk adds a chunk record: its time, and what a usage, finish or
// delta chunk says.
func (d *RowDecoder) addChunk(st *Stream, r *streamRecord) {
	t, _ := r[srTime].SafeInt()
	st.timed(t)
	st.Chunks++
	c := r[srChunk]
	switch c.GetString("type") {
	case "usage":
		st.Usage = d.decodeUsage(c.Get("usage"))
	case "finish":
		st.Finish = d.decodeFinish(c)
	case "text-delta", "reasoning-delta":
		st.delta(t, c, "text")
	case "tool-call-delta":
		st.delta(t, c, "argumentsDelta")
	}
}

// delta notes a delta chunk c at time t, whose text is its member key: the
// first that is not empty times the stream's first token.
func (st *Stream) delta(t int64, c jsontape.Value, key string) {
	if !st.HasDelta && c.Get(key).EncodedLen() > 0 {
		st.FirstDeltaTime, st.HasDelta = t, true
	}
}

// timed widens the stream's span of chunk times to t.
func (st *Stream) timed(t int64) {
	if !st.HasTimes {
		st.FirstTime, st.LastTime, st.HasTimes = t, t, true
		return
	}
	st.LastTime = t
}

// The members of an AssistantStreamRecord that decodeStream reads, found
// in one walk (jsontape.Value.Gather): their indexes, and the key of each.
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
		ch.ID = c.GetString("id")
		ch.Name = c.GetString("name")
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

// decodeFinish reads a finish chunk's FinishReason (docs/format.md §9.3).
func (d *RowDecoder) decodeFinish(c jsontape.Value) *Finish {
	reason := c.Get("reason")
	var f *Finish
	if d.arena != nil {
		f = d.arena.finishes.one()
	} else {
		f = new(Finish)
	}
	f.Kind = reason.GetString("kind")
	f.Failure = decodeFailure(reason.Get("failure"))
	return f
}
