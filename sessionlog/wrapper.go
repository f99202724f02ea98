package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

// wrapping is what a row's line wrapper (docs/format.md §10) says, read before the record
// inside is decoded.
type wrapping struct {
	wrapper   Wrapper
	method    string
	sessionID string
	// kind is RowOther or RowInvalid for a row that carries no record
	// (problem says why it is invalid), else RowEvent.
	kind    RowKind
	problem string
}

// unwrap recognises the line wrappers of docs/format.md §10 and returns the record inside,
// or nil when the row carries none (then r is complete).
func unwrap(w *wrapping, v jsontape.Value, m *recordMembers) jsontape.Value {
	// The first member of each name, from the walk of the row m is.
	typ, method, id, event := m.typ, m.method, m.id, m.event
	if method.Exists() && !typ.Exists() {
		w.wrapper = WrapJSONRPC
		w.method = method.String()
		params := v.Get("params")
		if params.Exists() {
			w.sessionID = params.GetString("sessionId")
		}
		if w.method != "session.event" {
			w.kind = RowOther
			return jsontape.Value{}
		}
		ev := params.Get("event")
		if w.sessionID == "" || !ev.Exists() || ev.Type() != jsontape.Object {
			w.kind = RowInvalid
			w.problem = "session.event notification needs params.sessionId (string) and params.event (object)"
			return jsontape.Value{}
		}
		return ev
	}
	if !method.Exists() && id.Exists() && !typ.Exists() && !event.Exists() {
		// A JSON-RPC response or request without a method we track.
		w.wrapper = WrapJSONRPC
		w.kind = RowOther
		return jsontape.Value{}
	}
	switch t := typ.String(); t {
	case "session_event":
		w.wrapper = WrapStreamJSON
		w.method = t
		w.sessionID = v.GetString("sessionId")
		if w.sessionID == "" || !event.Exists() || event.Type() != jsontape.Object {
			w.kind = RowInvalid
			w.problem = "session_event line needs sessionId (string) and event (object)"
			return jsontape.Value{}
		}
		return event
	case "result":
		w.wrapper = WrapStreamJSON
		w.method = t
		w.sessionID = v.GetString("sessionId")
		w.kind = RowOther
		return jsontape.Value{}
	}
	if !typ.Exists() && event.Exists() {
		w.wrapper = WrapEnvelope
		w.sessionID = v.GetString("sessionId")
		if w.sessionID == "" || event.Type() != jsontape.Object {
			w.kind = RowInvalid
			w.problem = "{sessionId, event} line needs sessionId (string) and event (object)"
			return jsontape.Value{}
		}
		return event
	}
	return v
}

func (w *wrapping) fill(r *Row, line int, b []byte) {
	r.Line, r.Bytes = line, b
	r.Wrapper, r.Method, r.SessionID = w.wrapper, w.method, w.sessionID
}

// recordOf views a decoded row's event record (inside any wrapper),
// parsing the row onto t; missing when the row is no JSON.
func recordOf(t *jsontape.Tape, r *Row) jsontape.Value {
	if uint64(len(r.Bytes)) > jsontape.MaxRowBytes {
		return jsontape.Value{}
	}
	if syntax, _ := t.Parse(r.Bytes, jsontape.MaxDepth, false); syntax != nil {
		return jsontape.Value{}
	}
	v := t.Root()
	switch r.Wrapper {
	case WrapJSONRPC:
		return v.Get("params", "event")
	case WrapStreamJSON, WrapEnvelope:
		return v.Get("event")
	}
	return v
}
