package sessionlog

import (
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// The message events (docs/format.md §6.4): what the decoder reads of their
// messages.

// messageMembers are the members of a message that the decoder reads, by
// their indexes (messageMember).
type messageMembers [rmMembers]jsontape.Value

// readMessage reads what every message event says of its message m: its
// role, id and source kind, and whether its content is empty.
func (e *Event) readMessage(m *messageMembers) {
	e.Role = m[rmRole].String()
	e.MessageID = m[rmID].String()
	e.SourceKind = m[rmSource].Get("kind").String()
	e.ContentEmpty = m[rmContent].ArrayLen() == 0
}

// decodeUserMessage reads a user/message, whose message is its data.
func (d *RowDecoder) decodeUserMessage(e *Event, data jsontape.Value) {
	var m messageMembers
	data.Gather(messageMember, m[:])
	e.readMessage(&m)
	if !m[rmID].Exists() {
		d.evidence(0, true)
	}
}

// decodeSystemMessage reads a system/message (v3+) or developer/message
// (v4).
func (d *RowDecoder) decodeSystemMessage(e *Event, data jsontape.Value) {
	var m messageMembers
	data.Get("message").Gather(messageMember, m[:])
	e.readMessage(&m)
	if e.Type == "developer/message" {
		d.evidence(4, false)
	} else {
		d.evidence(3, false)
	}
}

// decodeAssistantMessage reads an assistant/message: its message, the
// model that wrote it, the tool calls it asks for, its usage and its
// embedded stream (v2+).
func (d *RowDecoder) decodeAssistantMessage(e *Event, data jsontape.Value) {
	var m messageMembers
	d.messageOf(data).Gather(messageMember, m[:])
	e.Role = m[rmRole].String()
	e.MessageID = m[rmID].String()
	var src [smMembers]jsontape.Value
	m[rmSource].Gather(sourceMember, src[:])
	e.SourceKind = src[smKind].String()
	e.Provider = src[smProvider].String()
	e.Model = src[smModel].String()
	e.ContentEmpty = m[rmContent].ArrayLen() == 0
	d.readToolRequests(e, m[rmContent])
	e.Usage = d.decodeUsage(data.Get("usage"))
	e.Interrupted = data.GetBool("interrupted")
	if s := data.Get("stream"); s.Exists() {
		d.evidence(2, false)
		e.Stream = d.decodeStream(s)
	}
}

// readToolRequests reads the tool calls an assistant message's content
// asks for: dsh's tool-call blocks and the seed dialect's tool_use ones,
// whose input is kept as its JSON text.
func (d *RowDecoder) readToolRequests(e *Event, content jsontape.Value) {
	for b := range content.Elements() {
		var args string
		switch b.GetString("type") {
		case "tool-call":
			args = b.GetString("arguments")
		case "tool_use":
			d.evidence(0, true)
			args = b.Get("input").Raw()
		default:
			continue
		}
		e.Advertised = append(e.Advertised, ToolCallRef{ID: b.GetString("id"), Name: b.GetString("name"), Arguments: args})
	}
}

// decodeToolResult reads a tool/result: its message, the call it answers
// (docs/format.md §13.3) and its error flag (docs/format.md §13.4).
func (d *RowDecoder) decodeToolResult(e *Event, data jsontape.Value) {
	var m messageMembers
	d.messageOf(data).Gather(messageMember, m[:])
	e.Role = m[rmRole].String()
	e.MessageID = m[rmID].String()
	srcKind, srcCallID := m[rmSource].Get2("kind", "callId")
	e.SourceKind = srcKind.String()
	e.SyntheticResult = strings.HasPrefix(e.MessageID, "interrupted-tool-result-")
	block := m[rmContent].Get("0")
	d.readResultCall(e, &m, srcCallID, block)
	e.ResultHash = fnv64(m[rmContent].Raw())
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
	if m[rmContent].Type() == jsontape.String {
		d.evidence(0, true)
	}
}

// readResultCall reads which call a tool result answers, the first of:
// toolCallId (v4), source.callId, callId, the tool-result block's; and
// the seed dialect's tool name.
func (d *RowDecoder) readResultCall(e *Event, m *messageMembers, srcCallID, block jsontape.Value) {
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
	if m[rmToolName].Exists() {
		e.ToolName = m[rmToolName].String()
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
// in one walk (jsontape.Value.Gather): their indexes, and the key of each.
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

// messageMember is the index of a message member the decoder reads, -1
// for the others.
func messageMember(key string) int {
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
// found in one walk (jsontape.Value.Gather).
const (
	smKind = iota
	smProvider
	smModel
	smMembers
)

// sourceMember is the index of a source member the decoder reads, -1 for
// the others.
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

// fnv64 is the FNV-1a hash of s.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
