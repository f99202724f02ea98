package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

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
