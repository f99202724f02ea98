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
	case "request/header":
		// What judging a request/header on its own needs (SYSTEM_FORBIDDEN).
		e.HasSystem = data.Get("header", "system").Exists()
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
		if e.Reason = decodeReason(data.Get("reason")); e.Reason.Kind == "forked" {
			d.evidence(4, false)
		}
	case "tool/call":
		e.CallID, e.ToolName = data.GetString("callId"), data.GetString("name")
		e.Arguments = data.GetString("arguments")
	case "tool/result":
		d.decodeToolResult(e, data)
	case "user/message":
		d.decodeUserMessage(e, data)
	case "system/message", "developer/message":
		d.decodeSystemMessage(e, data)
	case "assistant/message":
		d.decodeAssistantMessage(e, data)
	case "request/header":
		e.HasSystem = data.Get("header", "system").Exists()
		e.Provider = data.GetString("header", "config", "provider")
		e.Model = data.GetString("header", "config", "model")
	case "request/context":
		e.Provider, e.Model = data.GetString("provider"), data.GetString("model")
	case "tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch":
		decodeDispatch(e, data)
	case "llm/retry", "llm/retry-started":
		decodeRetry(e, data)
	case "session/end-seed":
		e.Inherited = data.GetBool("inherited")
	case "approval/asked":
		e.CallID, e.ToolName = data.GetString("callId"), data.GetString("toolName")
	}
}

// decodeDispatch reads a programmatic tool call's dispatch event: its own
// id, the calls it runs under, its tool and its outcome.
func decodeDispatch(e *Event, data jsontape.Value) {
	e.SubCallID = data.GetString("subCallId")
	e.CallID = data.GetString("parentCallId")
	e.RootCallID = data.GetString("rootCallId")
	e.ToolName = data.GetString("name")
	e.IsError = data.GetBool("isError")
	e.ErrorCode = data.GetString("error", "code")
}

// decodeRetry reads a model call's retry: its number, and an llm/retry's
// provider and failure.
func decodeRetry(e *Event, data jsontape.Value) {
	e.Retry, _ = data.Get("retry").SafeInt()
	if e.Type == "llm/retry" {
		e.Provider = data.GetString("provider")
		e.Failure = decodeFailure(data.Get("failure"))
	}
}
