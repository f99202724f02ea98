package sessionlog

import (
	"encoding/json"
	"iter"
)

// Message is one message of the model-visible history (docs/format.md §8.4). It is a value
// with unexported fields: what Derive returns cannot be changed by callers.
type Message struct {
	seq        int64
	role       string
	content    string // the content array as JSON text
	toolCallID string
	isError    bool
	provider   string
	model      string
}

// Seq is the seq of the surface event the message projects.
func (m Message) Seq() int64 { return m.seq }

// Role is system, developer, user, assistant or tool.
func (m Message) Role() string { return m.role }

// Content is the message's content blocks as a JSON array.
func (m Message) Content() string { return m.content }

// ToolCallID is the call a tool-role message answers (v4).
func (m Message) ToolCallID() string { return m.toolCallID }

// IsError is a tool-role message's error flag (v4).
func (m Message) IsError() bool { return m.isError }

// Provider and Model identify the model that wrote an assistant message.
func (m Message) Provider() string { return m.provider }

// Model is the model that wrote an assistant message.
func (m Message) Model() string { return m.model }

// MarshalJSON writes {"seq","role","content"} (plus toolCallId and isError
// for tool-role messages).
func (m Message) MarshalJSON() ([]byte, error) {
	type out struct {
		Seq        int64           `json:"seq"`
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"toolCallId,omitempty"`
		IsError    *bool           `json:"isError,omitempty"`
	}
	o := out{Seq: m.seq, Role: m.role, Content: json.RawMessage(m.content)}
	if m.role == "tool" {
		o.ToolCallID = m.toolCallID
		if m.isError {
			o.IsError = &m.isError
		}
	}
	return json.Marshal(o)
}

// History is the model-visible history: an immutable list of messages.
type History struct {
	msgs []Message
}

// Len is the number of messages.
func (h History) Len() int { return len(h.msgs) }

// At is the i-th message.
func (h History) At(i int) Message { return h.msgs[i] }

// All iterates over the messages in order.
func (h History) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		for i, m := range h.msgs {
			if !yield(i, m) {
				return
			}
		}
	}
}

// MarshalJSON writes the history as a JSON array of messages.
func (h History) MarshalJSON() ([]byte, error) {
	if h.msgs == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(h.msgs)
}
