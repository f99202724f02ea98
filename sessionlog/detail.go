package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

// decodeData reads the typed payload fields the validator and engine need.
func (d *RowDecoder) decodeData(r *Row, e *Event, data jsontape.Value) {
	turn, step := data.Get2("turn", "step")
	if n, ok := turn.SafeInt(); ok {
		e.Turn, e.HasTurn = n, true
	}
	if n, ok := step.SafeInt(); ok {
		e.Step, e.HasStep = n, true
	}
	switch e.Type {
	case "assistant/attempt":
		d.evidence(2, false)
		if d.shallow {
			e.Stream = shallowStream
		} else {
			e.Stream = d.decodeStream(data.Get("stream"))
		}
	case "assistant/chunk":
		d.evidence(0, false)
		e.Chunk = d.chunk
		if c := data.Get("chunk"); d.shallow {
			if c.Type() == jsontape.Object {
				e.Chunk.Type = c.GetString("type")
			}
		} else {
			d.decodeChunk(e.Chunk, c)
		}
	}
	if d.det != nil { // the type has details (hasDetail)
		e.Detail = d.det
		if d.shallow {
			d.decodePlacement(e, data)
		} else {
			d.decodeDetail(e, data)
		}
	}
}

// decodePlacement is decodeDetail of a shallow decode (SetShallow): the
// detail fields placing an event reads, and every check of decodeDetail
// that is evidence of the format, made the same way.
func (d *RowDecoder) decodePlacement(e *Event, data jsontape.Value) {
	switch e.Type {
	case "turn/end":
		if r := data.Get("reason"); r.Type() == jsontape.String {
			e.Reason.Kind = r.String()
		} else {
			e.Reason.Kind = r.GetString("kind")
		}
		if e.Reason.Kind == "forked" {
			d.evidence(4, false)
		}
	case "tool/call", "approval/asked":
		e.CallID = data.GetString("callId")
		if e.Type == "tool/call" {
			e.ToolName = data.GetString("name")
		} else {
			e.ToolName = data.GetString("toolName")
		}
	case "tool/result":
		d.decodeToolResult(e, data)
	case "user/message":
		if !data.Get("id").Exists() {
			d.evidence(0, true)
		}
	case "system/message":
		d.evidence(3, false)
	case "developer/message":
		d.evidence(4, false)
	case "assistant/message":
		msg := d.messageOf(data)
		for b := range msg.Get("content").Elements() {
			if b.GetString("type") == "tool_use" {
				d.evidence(0, true)
				break
			}
		}
		if data.Get("stream").Exists() {
			d.evidence(2, false)
			e.Stream = shallowStream
		}
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		e.SubCallID = data.GetString("subCallId")
		e.CallID = data.GetString("parentCallId")
		e.ToolName = data.GetString("name")
	}
}

// decodeDetail reads the fields of e.Detail, which is the event's own
// (hasDetail(e.Type)).
func (d *RowDecoder) decodeDetail(e *Event, data jsontape.Value) {
	switch e.Type {
	case "turn/end":
		e.Reason = decodeReason(data.Get("reason"))
		if e.Reason.Kind == "forked" {
			d.evidence(4, false)
		}
	case "tool/call":
		e.CallID = string(data.GetString("callId"))
		e.ToolName = string(data.GetString("name"))
		e.Arguments = string(data.GetString("arguments"))
	case "tool/result":
		d.decodeToolResult(e, data)
	case "user/message":
		var m [rmMembers]jsontape.Value
		data.Gather(resultMessageMember, m[:])
		e.Role = m[rmRole].String()
		e.MessageID = m[rmID].String()
		e.SourceKind = m[rmSource].Get("kind").String()
		e.ContentEmpty = m[rmContent].ArrayLen() == 0
		if !m[rmID].Exists() {
			d.evidence(0, true)
		}
	case "system/message", "developer/message":
		var m [rmMembers]jsontape.Value
		data.Get("message").Gather(resultMessageMember, m[:])
		e.Role = m[rmRole].String()
		e.MessageID = m[rmID].String()
		e.SourceKind = m[rmSource].Get("kind").String()
		e.ContentEmpty = m[rmContent].ArrayLen() == 0
		if e.Type == "developer/message" {
			d.evidence(4, false)
		} else {
			d.evidence(3, false)
		}
	case "assistant/message":
		d.decodeAssistantMessage(e, data)
	case "request/header":
		e.HasSystem = data.Get("header", "system").Exists()
		e.Provider = string(data.GetString("header", "config", "provider"))
		e.Model = string(data.GetString("header", "config", "model"))
	case "request/context":
		e.Provider = string(data.GetString("provider"))
		e.Model = string(data.GetString("model"))
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		e.SubCallID = string(data.GetString("subCallId"))
		e.CallID = string(data.GetString("parentCallId"))
		e.RootCallID = string(data.GetString("rootCallId"))
		e.ToolName = string(data.GetString("name"))
		e.IsError = data.GetBool("isError")
		e.ErrorCode = string(data.GetString("error", "code"))
	case "llm/retry":
		e.Provider = string(data.GetString("provider"))
		if n, ok := data.Get("retry").SafeInt(); ok {
			e.Retry = n
		}
		e.Failure = decodeFailure(data.Get("failure"))
	case "llm/retry-started":
		if n, ok := data.Get("retry").SafeInt(); ok {
			e.Retry = n
		}
	case "session/end-seed":
		e.Inherited = data.GetBool("inherited")
	case "approval/asked":
		e.CallID = string(data.GetString("callId"))
		e.ToolName = string(data.GetString("toolName"))
	}
}
