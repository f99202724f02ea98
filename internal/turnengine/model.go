// Package turnengine rebuilds the per-turn state of dsh sessions from their
// events: turns, steps, model attempts and tool calls, closed when dsh
// closes them or as dangling when it never does, priced, and handed out
// (Drain) as the values of this file. It is the state machine only and is
// pure and deterministic: the caller hands it events and the time, an
// Observer is told what it sees, and it imports no collector package —
// rendering them as spans and aggregating metrics is internal/turnrender's
// job. The connector, the CLI and the benchmarks share it.
package turnengine

import (
	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Turn is one run of the agent loop, closed.
type Turn struct {
	SessionID string
	Number    int64
	Agent     string
	// Nested: the session is a subagent child (its header's
	// delegationDepth ≥ 1), so the turn is an agent invocation made by
	// another agent's.
	Nested bool
	// StartTime and EndTime are event times in Unix milliseconds, clamped
	// so that EndTime ≥ StartTime.
	StartTime, EndTime int64
	StartSeq, EndSeq   int64
	// LoggedEndTime is EndTime as logged, before clamping: the turn/end's
	// time (a dangling turn's last event time). Below StartTime, the clock
	// went back (docs/format.md §4).
	LoggedEndTime int64
	// Reason is the turn/end reason; for a dangling turn Kind is "dangling".
	Reason sessionlog.Reason
	// DanglingCause is timeout, evicted, shutdown or end-of-input.
	DanglingCause string
	Steps         []*Step
	Events        []SpanEvent
	// Clamped is set when some time of the turn had to be clamped.
	Clamped bool
	Usage   Tokens
	// Cost is the turn's cost in USD: the sum over its priced model calls
	// (PricedCalls of them); UnpricedCalls are calls with usage whose model
	// the price table does not know, which add nothing.
	Cost                       pricing.Cost
	PricedCalls, UnpricedCalls int
	// Late is set on a late close: not a turn of its own but the turn/end
	// that dsh wrote for a turn the engine had closed as dangling.
	Late *LateClose
	// Fragment marks the finished steps of a turn still open (live steps):
	// their spans only; the root follows when the turn closes, with the
	// steps not emitted yet. StepCount is the closed turn's number of
	// steps, those emitted before included.
	Fragment  bool
	StepCount int
	// Of is a fragment's turn (still open); Replayed marks a fragment
	// rebuilt after a restart, whose spans went out before it: it counts
	// in its turn's totals only.
	Of       *Turn
	Replayed bool
	// LiveModelCalls and LiveToolCalls count the model and tool calls of
	// the steps already emitted live, which Steps no longer holds (their
	// cost is in Cost already).
	LiveModelCalls, LiveToolCalls int
	// Findings are what went wrong in the turn (internal/findings), known
	// when it closes; a late close has none.
	Findings []findings.Finding
	// evidence gathers the findings' evidence while the turn is open.
	evidence *findings.Turn
}

// NumSteps is the turn's number of steps, those emitted live included.
func (t *Turn) NumSteps() int { return max(t.StepCount, len(t.Steps)) }

// Dangling reports whether dsh never closed the turn.
func (t *Turn) Dangling() bool { return t.DanglingCause != "" }

// Step is one model request plus the tool executions it asked for.
type Step struct {
	Number             int64
	StartTime, EndTime int64
	StartSeq           int64
	Attempts           []*Attempt
	Tools              []*ToolCall
	Events             []SpanEvent
	Clamped            bool
	// Open is true when the step had no step/end (a dangling turn).
	Open bool
}

// Attempt is one model call of a step: a chat span.
type Attempt struct {
	// Index is the attempt's number in its step, from 1.
	Index              int
	StartTime, EndTime int64
	Provider, Model    string
	Usage              *sessionlog.Usage
	// FinishKind is the stream's finish reason kind (stop, tool-calls,
	// max-tokens, error, aborted, …), empty when the stream had none.
	FinishKind string
	Failure    *sessionlog.Failure
	// FirstChunkTime is the time of the first non-empty delta (HasFirstChunk).
	FirstChunkTime int64
	HasFirstChunk  bool
	// Committed is true for the attempt an assistant/message committed;
	// MessageSeq and Sources are that message's seq and sourceEventSeqs.
	Committed   bool
	Interrupted bool
	MessageSeq  int64
	Sources     []int64
	// Advertised are the tool calls the message requested (id and name).
	Advertised []sessionlog.ToolCallRef
	Clamped    bool
	// InputMessages and OutputMessages are the captured content (JSON),
	// set only with content capture on.
	InputMessages, OutputMessages string
	// chunk bookkeeping (v0): seqs of the attempt's chunks.
	firstSeq, lastSeq int64
	closed            bool
	// SystemInstructions is the captured system prompt (JSON, parts), set
	// only with content capture on.
	SystemInstructions string
	// Cost is the call's cost in USD when Priced: its usage at the price
	// the table gives its provider and model at the turn's start.
	Cost   pricing.Cost
	Priced bool
}

// Failed reports whether the attempt failed (an error or aborted finish
// without a committed message).
func (a *Attempt) Failed() bool {
	return !a.Committed && (a.FinishKind == "error" || a.FinishKind == "aborted" || a.Failure != nil)
}

// ToolCall is one tool execution (or a nested dispatch sub-call).
type ToolCall struct {
	CallID, Name       string
	StartTime, EndTime int64
	StartSeq           int64
	// LoggedStartTime and LoggedEndTime are the times of the tool/call (or
	// dispatch start) and of the tool/result (or dispatch settle) as
	// logged, before StartTime and EndTime were clamped into the step or
	// parent call; LoggedEndTime is 0 while the outcome is unknown.
	LoggedStartTime, LoggedEndTime int64
	// NotStarted marks a call known only from its result, with no tool/call
	// (crash repair's TOOL_NOT_STARTED); it starts at the result.
	NotStarted bool
	// Outcome is ok, error, or unknown (no result).
	Outcome   string
	ErrorCode string
	// Arguments and Result are captured content (only with capture on).
	Arguments, Result string
	SubCalls          []*ToolCall
	// SubCallID is set on nested dispatch sub-calls.
	SubCallID string
	Clamped   bool
	done      bool
}

// SpanEvent is a point event on a span: a user message, a retry, a
// compaction, an approval, a hook.
type SpanEvent struct {
	Name  string
	Time  int64
	Seq   int64
	Attrs []Attr
	// CallID puts the event on that tool call's span when it is in the step.
	CallID string
}

// Attr is one span-event attribute.
type Attr struct {
	Key   string
	Value any // string, int64, bool
}

// Tokens are a turn's token totals, disjoint as dsh counts them.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite, Reasoning int64
	// Reported is set when some model call reported usage: without it the
	// totals are unknown, not zero.
	Reported bool
}

func (t *Tokens) add(u *sessionlog.Usage) {
	if u == nil {
		return
	}
	t.Reported = true
	t.Input += u.InputTokens
	t.Output += u.OutputTokens
	t.CacheRead += u.CacheReadTokens
	t.CacheWrite += u.CacheWriteTokens
	t.Reasoning += u.ReasoningTokens
}
