package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

// wrapping is what a row's line wrapper (docs/format.md §10) says, read
// before the record inside is decoded.
type wrapping struct {
	wrapper   Wrapper
	method    string
	sessionID string
	// kind is RowOther or RowInvalid for a row that carries no record
	// (problem says why it is invalid), else RowEvent.
	kind    RowKind
	problem string
}

// unwrap recognises the line wrappers of docs/format.md §10 in a row, v,
// of members m and returns the record inside: v itself when the row is
// bare, none when it carries no record (w says why).
func unwrap(w *wrapping, v jsontape.Value, m *recordMembers) jsontape.Value {
	// The first member of each name, from the walk of the row m is.
	typ, method, id, event := m.typ, m.method, m.id, m.event
	switch t := typ.String(); {
	case method.Exists() && !typ.Exists():
		return w.jsonRPC(v, method.String())
	case !method.Exists() && id.Exists() && !typ.Exists() && !event.Exists():
		// A JSON-RPC response or request without a method we track.
		w.wrapper, w.kind = WrapJSONRPC, RowOther
		return jsontape.Value{}
	case t == "session_event" || t == "result":
		return w.streamJSON(v, t, event)
	case !typ.Exists() && event.Exists():
		return w.envelopeLine(v, event)
	}
	return v
}

// jsonRPC reads an SDK JSON-RPC notification, which carries an event when
// its method is session.event.
func (w *wrapping) jsonRPC(v jsontape.Value, method string) jsontape.Value {
	w.wrapper, w.method = WrapJSONRPC, method
	params := v.Get("params")
	w.sessionID = params.GetString("sessionId")
	if method != "session.event" {
		w.kind = RowOther
		return jsontape.Value{}
	}
	if ev := params.Get("event"); w.sessionID != "" && ev.Type() == jsontape.Object {
		return ev
	}
	return w.invalid("session.event notification needs params.sessionId (string) and params.event (object)")
}

// streamJSON reads a headless session's line of type typ: a session_event
// carries an event, a result none.
func (w *wrapping) streamJSON(v jsontape.Value, typ string, event jsontape.Value) jsontape.Value {
	w.wrapper, w.method = WrapStreamJSON, typ
	w.sessionID = v.GetString("sessionId")
	if typ == "result" {
		w.kind = RowOther
		return jsontape.Value{}
	}
	if w.sessionID != "" && event.Type() == jsontape.Object {
		return event
	}
	return w.invalid("session_event line needs sessionId (string) and event (object)")
}

// envelopeLine reads a {sessionId, event} line.
func (w *wrapping) envelopeLine(v, event jsontape.Value) jsontape.Value {
	w.wrapper = WrapEnvelope
	w.sessionID = v.GetString("sessionId")
	if w.sessionID != "" && event.Type() == jsontape.Object {
		return event
	}
	return w.invalid("{sessionId, event} line needs sessionId (string) and event (object)")
}

// invalid marks the row invalid for problem; it carries no record.
func (w *wrapping) invalid(problem string) jsontape.Value {
	w.kind, w.problem = RowInvalid, problem
	return jsontape.Value{}
}

// row is the row of a line, b, whose wrapper carries no record: a line of
// a transport, or a wrapper without its record (an invalid row).
func (w *wrapping) row(line int, b []byte) *Row {
	r := &Row{Kind: w.kind}
	w.fill(r, line, b)
	if w.problem != "" {
		r.problem(-1, CodeWrapperInvalid, w.problem)
	}
	return r
}

// fill gives a row decoded from a line, b, what its wrapper says.
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
