package sessionlog

import (
	"encoding/json"

	"github.com/valyala/fastjson"
)

// LogicalJSON is the event as one logical envelope (§3): a bare event row
// as it is, a wrapped event without its wrapper, and a packed row's member
// as the assistant/chunk event it stands for (§4.1). The result is a new
// slice, except for a bare event row, whose bytes are returned as they are.
func (e *Event) LogicalJSON() []byte {
	r := e.Row
	switch {
	case r.Kind == RowEvent && r.Wrapper == WrapNone:
		return r.Bytes
	case r.Kind == RowEvent:
		var p fastjson.Parser
		if v := envelope(&p, r); v != nil {
			return v.MarshalTo(nil)
		}
		return nil
	case r.Kind == RowPacked:
		return packedMember(e)
	}
	return nil
}

// packedMember rebuilds the assistant/chunk event a packed row's member
// stands for.
func packedMember(e *Event) []byte {
	var p fastjson.Parser
	v := envelope(&p, e.Row)
	if v == nil {
		return nil
	}
	data := v.Get("data")
	members := data.GetArray("texts")
	if members == nil {
		members = data.GetArray("args")
	}
	if e.Member >= len(members) {
		return nil
	}
	text := string(members[e.Member].GetStringBytes())
	chunk := map[string]any{"type": e.Chunk.Type, "index": e.Chunk.Index}
	if e.Chunk.Type == "tool-call-delta" {
		chunk["id"] = e.Chunk.ID
		if data.Get("name") != nil {
			chunk["name"] = e.Chunk.Name
		}
		chunk["argumentsDelta"] = text
	} else {
		chunk["text"] = text
	}
	b, _ := json.Marshal(map[string]any{
		"type": "assistant/chunk", "seq": e.Seq, "time": e.Time,
		"data": map[string]any{"turn": e.Turn, "step": e.Step, "chunk": chunk},
	})
	return b
}
