package sessionlog

import "encoding/json"

// LogicalJSON is the event as one logical envelope (docs/format.md §4): a bare event row
// as it is, a wrapped event without its wrapper, and a packed row's member
// as the assistant/chunk event it stands for (docs/format.md §5.1). The result is a new
// slice, except for a bare event row, whose bytes are returned as they are.
func (e *Event) LogicalJSON() []byte {
	r := e.Row
	switch {
	case r.Kind == RowEvent && r.Wrapper == WrapNone:
		return r.Bytes
	case r.Kind == RowEvent:
		t := getTape()
		defer putTape(t)
		if v := envelope(t, r); v.ok() {
			return v.MarshalTo(nil) // the inner event's bytes, exactly as received
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
	t := getTape()
	defer putTape(t)
	v := envelope(t, e.Row)
	if !v.ok() {
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
	text := members[e.Member].GetStringBytes()
	chunk := map[string]any{"type": e.Chunk.Type, "index": e.Chunk.Index}
	if e.Chunk.Type == "tool-call-delta" {
		chunk["id"] = e.Chunk.ID
		if data.Get("name").ok() {
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
