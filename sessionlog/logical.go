package sessionlog

import (
	"encoding/json"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

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
		t := jsontape.Get()
		defer jsontape.Put(t)
		if v := recordOf(t, r); v.Exists() {
			return []byte(v.Raw()) // the inner event's bytes, exactly as received
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
	t := jsontape.Get()
	defer jsontape.Put(t)
	v := recordOf(t, e.Row)
	if !v.Exists() {
		return nil
	}
	data := v.Get("data")
	members := data.Get("texts")
	if members.ArrayLen() == 0 {
		members = data.Get("args")
	}
	member := members.Index(e.Member)
	if !member.Exists() {
		return nil
	}
	text := member.GetString()
	chunk := map[string]any{"type": e.Chunk.Type, "index": e.Chunk.Index}
	if e.Chunk.Type == "tool-call-delta" {
		chunk["id"] = e.Chunk.ID
		if data.Get("name").Exists() {
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
