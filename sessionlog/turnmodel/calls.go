package turnmodel

import "strings"

// Call is a tool/call waiting for its result.
type Call struct {
	ID, Name string
	// Seq is the tool/call's seq; Step the step it started in.
	Seq, Step int64
}

// Result is what a tool/result says about the call it closes.
type Result struct {
	// CallID is the call id the result's message names (empty in the seed
	// dialect).
	CallID string
	// Cites is the first of the result's sourceEventSeqs, when it has any.
	Cites    int64
	HasCites bool
	// ToolName is the seed dialect's message.toolName.
	ToolName string
	// Step is the step the result is in: every rule is scoped to it.
	Step int64
	// Seed: the result was written in the seed dialect, whose results name
	// their call only by citing it or by naming its tool.
	Seed bool
}

// Calls are the tool calls waiting for their results, in start order. The
// pairing rules (docs: tool result ↔ call pairing), all scoped to the
// result's step — a call of another step left without a result is
// unresolved there, never this result's call:
//
//  1. the result names a call id: the pending call with that id, or none;
//  2. it cites a seq (sourceEventSeqs[0]): the pending call started at it;
//  3. it names a tool: the oldest pending call of that tool;
//  4. it carries no evidence at all (no call id, no citation, no tool
//     name) and is not of the seed dialect: the oldest pending call;
//  5. otherwise none — the result closes no call (TOOL_RESULT_NO_CALL) and
//     the call stays pending (TOOL_CALL_UNRESOLVED when its step ends).
//
// Evidence that points at no open call is never overridden by a guess.
type Calls struct {
	pending []Call
}

// Add records a started call. Its strings are copied: an event's strings
// are views into its row.
func (c *Calls) Add(id, name string, seq, step int64) {
	c.pending = append(c.pending, Call{ID: strings.Clone(id), Name: strings.Clone(name), Seq: seq, Step: step})
}

// Find is the index of the pending call r closes, or -1.
func (c *Calls) Find(r Result) int {
	inStep := func(i int) bool { return c.pending[i].Step == r.Step }
	if r.CallID != "" {
		for i := range c.pending {
			if inStep(i) && c.pending[i].ID == r.CallID {
				return i
			}
		}
		return -1
	}
	if r.HasCites {
		for i := range c.pending {
			if inStep(i) && c.pending[i].Seq == r.Cites {
				return i
			}
		}
	}
	if r.ToolName != "" {
		for i := range c.pending {
			if inStep(i) && c.pending[i].Name == r.ToolName {
				return i
			}
		}
		return -1
	}
	if r.HasCites || r.Seed {
		return -1
	}
	for i := range c.pending {
		if inStep(i) {
			return i
		}
	}
	return -1
}

// Resolve finds and removes the call r closes.
func (c *Calls) Resolve(r Result) (Call, bool) {
	i := c.Find(r)
	if i < 0 {
		return Call{}, false
	}
	call := c.pending[i]
	c.pending = append(c.pending[:i], c.pending[i+1:]...)
	return call, true
}

// Pending are the calls still waiting, oldest first. The slice is the
// set's own: read it, do not keep it.
func (c *Calls) Pending() []Call { return c.pending }

// Has reports whether a call with id is pending.
func (c *Calls) Has(id string) bool {
	for i := range c.pending {
		if c.pending[i].ID == id {
			return true
		}
	}
	return false
}

// Reset forgets every pending call.
func (c *Calls) Reset() { c.pending = c.pending[:0] }

// Len is the number of pending calls.
func (c *Calls) Len() int { return len(c.pending) }
