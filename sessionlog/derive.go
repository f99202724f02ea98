package sessionlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// Deriver folds one session's events into its surface and projects the
// model-visible history, as dsh's deriveMessages does (docs/format.md §8). It keeps the
// projected messages of the current surface, nothing else of the log.
type Deriver struct {
	surface []surfaceNode
	// calls maps the seq of each tool/call of the open step to its callId,
	// so a seed-dialect result can name its call (it cites only the seq).
	calls map[int64]string
}

// NewDeriver returns an empty Deriver.
func NewDeriver() *Deriver {
	return &Deriver{calls: map[int64]string{}}
}

// Event folds one event under format f. Events must come in seq order.
// An event whose surfaceOp cannot apply (the validator reports why) leaves
// the surface as it was.
func (d *Deriver) Event(e *Event, f Format) {
	switch e.Type {
	case "step/start":
		clear(d.calls)
	case "tool/call":
		d.calls[e.Seq] = strings.Clone(e.CallID)
	}
	if !IsSurfaceType(e.Type, f.RulesVersion()) {
		return
	}
	switch e.Surface.Kind {
	case SurfaceAppend:
		d.surface = append(d.surface, d.project(e, f))
	case SurfaceReplace:
		seqs := make([]int64, len(d.surface))
		for i, n := range d.surface {
			seqs[i] = n.seq
		}
		i := slices.Index(seqs, e.Surface.Start)
		j := slices.Index(seqs, e.Surface.End)
		if i < 0 || j < i {
			return
		}
		next := append(d.surface[:i:i], d.project(e, f))
		d.surface = append(next, d.surface[j+1:]...)
	}
}

// History returns the history of the current surface.
func (d *Deriver) History() History {
	msgs := make([]Message, 0, len(d.surface))
	for _, n := range d.surface {
		if n.projected {
			msgs = append(msgs, n.msg)
		}
	}
	return History{msgs: msgs}
}

// Last is the last message of the current history — after an append, the
// message it projected — and false when the history is empty. It copies
// nothing, so a caller that follows the history event by event (a replay
// page building each step's context) reads each new message in constant
// time, where History costs the whole history each call.
func (d *Deriver) Last() (Message, bool) {
	for i := len(d.surface) - 1; i >= 0; i-- {
		if d.surface[i].projected {
			return d.surface[i].msg, true
		}
	}
	return Message{}, false
}

// surfaceNode is one entry of the folded surface: the seq of a surface event and
// what it projects to (nothing, for empty assistant or system content).
type surfaceNode struct {
	seq       int64
	msg       Message
	projected bool
}

// project computes what a surface event shows the model (docs/format.md §8.4).
// The message it returns owns its strings: a Deriver keeps the surface for
// the session's life, and a view would keep the event's row alive with it
// (and the row, all the memory it was read into: the file transport's
// chunk).
func (d *Deriver) project(e *Event, f Format) surfaceNode {
	n := surfaceNode{seq: e.Seq}
	t := jsontape.Get()
	defer jsontape.Put(t)
	if content, ok := messageContent(recordOf(t, e.Row), e.Type); ok {
		n.msg, n.projected = d.message(e, f, content)
	}
	return n
}

// messageContent is the content of the message of a surface event of type
// typ, found in its record; false when the record has no data.
func messageContent(rec jsontape.Value, typ string) (jsontape.Value, bool) {
	data := rec.Get("data")
	if !data.Exists() {
		return jsontape.Value{}, false
	}
	msg := data
	if typ != "user/message" {
		if m := data.Get("message"); m.Exists() {
			msg = m // else the earliest v0 shape: the message's fields in data
		}
	}
	return msg.Get("content"), true
}

// message is the message an event with content shows the model; false
// when it shows none (empty assistant or system content is kept for its
// usage, never shown).
func (d *Deriver) message(e *Event, f Format, content jsontape.Value) (Message, bool) {
	m := Message{seq: e.Seq}
	switch e.Type {
	case "user/message":
		m.role = "user"
	case "assistant/message":
		m.role = "assistant"
		m.provider, m.model = strings.Clone(e.Provider), strings.Clone(e.Model)
	case "system/message":
		m.role = "system"
	case "developer/message":
		m.role = "developer"
	case "tool/result":
		return d.toolMessage(e, f, content), true
	default:
		return Message{}, false
	}
	if (m.role == "assistant" || m.role == "system") && content.ArrayLen() == 0 {
		return Message{}, false
	}
	m.content = jsonArray(content)
	return m, true
}

// toolMessage is the message a tool/result shows the model: a tool-role
// message from v4 on, else a user message of one tool-result block. A
// seed-dialect result names its call by the seq of its tool/call only.
func (d *Deriver) toolMessage(e *Event, f Format, content jsontape.Value) Message {
	callID := e.CallID
	if callID == "" && len(e.Sources) > 0 {
		callID = d.calls[e.Sources[0]]
	}
	if f.RulesVersion() >= 4 && !f.Seed {
		return Message{seq: e.Seq, role: "tool", content: jsonArray(content), toolCallID: strings.Clone(callID), isError: e.IsError}
	}
	return Message{seq: e.Seq, role: "user", content: toolResultBlock(content, callID, e.IsError)}
}

// jsonArray renders a content value as a JSON array; a bare string (seed
// dialect) becomes one text block, anything absent an empty array.
func jsonArray(v jsontape.Value) string {
	switch v.Type() {
	case jsontape.String:
		return textBlocks(v.GetString())
	case jsontape.Array:
		return strings.Clone(v.Raw()) // as written: content is kept byte for byte
	}
	return "[]"
}

func textBlocks(s string) string {
	type text struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	b, _ := json.Marshal([]text{{"text", s}})
	return string(b)
}

// toolResultBlock renders a user-role tool result: the stored content when
// it already is one tool-result block (v0–v3), else the content wrapped in
// one (the seed dialect's bare string, the earliest v0 writers' raw list).
func toolResultBlock(content jsontape.Value, callID string, isError bool) string {
	if content.ArrayLen() == 1 && content.GetString("0", "type") == "tool-result" {
		return strings.Clone(content.Raw())
	}
	inner := json.RawMessage(jsonArray(content))
	b, _ := json.Marshal([]any{struct {
		Type       string          `json:"type"`
		ToolCallID string          `json:"toolCallId"`
		Content    json.RawMessage `json:"content"`
		IsError    bool            `json:"isError"`
	}{"tool-result", callID, inner, isError}})
	return string(b)
}

// StepRef names a step of a session.
type StepRef struct {
	Turn, Step int64
}

func (s StepRef) String() string { return fmt.Sprintf("%d.%d", s.Turn, s.Step) }

// ErrStepNotFound is returned by Derive when the log has no such step.
var ErrStepNotFound = errors.New("step not found")

// Derive reads a session log and returns its model-visible history: at the
// end of the log, or — with before — as the model saw it when the step's
// first model call began (after the step's own prompt and context
// messages, before its assistant output). A step with no model call gives
// the history at its step/end. Rows of other sessions in a wrapped stream
// are skipped: the first session seen is derived.
func Derive(r io.Reader, opts Options, before *StepRef) (History, error) {
	dec, err := NewDecoder(r, opts)
	if err != nil {
		return History{}, err
	}
	defer dec.Close()
	d := NewDeriver()
	session, sessionSet := "", false
	inStep := false
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return History{}, err
		}
		if row.Wrapper != WrapNone && row.Kind != RowOther && row.Kind != RowInvalid {
			if !sessionSet {
				session, sessionSet = row.SessionID, true
			} else if row.SessionID != session {
				continue
			}
		}
		for i := range row.Events {
			e := &row.Events[i]
			if before != nil {
				isStep := e.HasTurn && e.HasStep && e.Turn == before.Turn && e.Step == before.Step
				switch {
				case e.Type == "step/start" && isStep:
					inStep = true
				case inStep && isStep && (e.Type == "assistant/chunk" || e.Type == "assistant/attempt" ||
					e.Type == "assistant/message" || e.Type == "step/end"):
					return d.History(), nil
				}
			}
			d.Event(e, dec.Format())
		}
	}
	if before != nil {
		return History{}, fmt.Errorf("%w: %s", ErrStepNotFound, before)
	}
	return d.History(), nil
}
