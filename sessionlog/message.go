package sessionlog

import (
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

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

// messageOf is data.message, or data itself for the earliest v0 writers,
// which put the message's fields (content, callId, …) straight into data.
func (d *RowDecoder) messageOf(data jsontape.Value) jsontape.Value {
	if m := data.Get("message"); m.Exists() {
		return m
	}
	return data
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
