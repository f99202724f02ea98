// Package findings says what went wrong in a turn, exactly and from the log
// alone: no model is asked. The turn engine feeds a turn's tool calls and
// results to a Turn as it applies them, and closes it with the turn's
// totals; the rules below give the same findings wherever the same events
// are applied — in the collector, in the CLI, on the replay page.
//
// The rules (docs/design.md §11):
//
//   - tool_loop: one tool called with the same arguments (compared as
//     canonical JSON) that got the same result LoopRepeats times or more in
//     the turn. A poll whose result changes is progress, not a loop.
//   - tool_error_streak: ErrorStreak or more failed tool results in a row
//     in the turn, no successful one between them.
//   - unanswered_tool_call: dsh ended the turn (turn/end) while a tool call
//     of it had no result.
//   - model_retries: Retries or more model calls of the turn were retried
//     (llm/retry-started: dsh retried a failed request).
//   - over_steps, over_tokens, over_cost, over_duration: the turn went
//     beyond a budget (each off until its limit is set).
//
// A turn's end reason is not a finding: it has its own metric.
//
// The package is pure: no collector import, no clock.
package findings

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The findings' names.
const (
	ToolLoop           = "tool_loop"
	ToolErrorStreak    = "tool_error_streak"
	UnansweredToolCall = "unanswered_tool_call"
	ModelRetries       = "model_retries"
	OverSteps          = "over_steps"
	OverTokens         = "over_tokens"
	OverCost           = "over_cost"
	OverDuration       = "over_duration"
)

// Names are every finding's name, in the order findings are reported.
var Names = []string{ToolLoop, ToolErrorStreak, UnansweredToolCall, ModelRetries, OverSteps, OverTokens, OverCost, OverDuration}

// Config are the rules' thresholds.
type Config struct {
	// LoopRepeats is how many identical calls with identical results make
	// a loop (default 3).
	LoopRepeats int `mapstructure:"loop_repeats"`
	// ErrorStreak is how many failed results in a row make a streak
	// (default 3).
	ErrorStreak int `mapstructure:"error_streak"`
	// Retries is how many model-call retries in a turn make
	// model_retries (default 3).
	Retries int `mapstructure:"retries"`
	// MaxSteps, MaxTokens (input, cached, output and reasoning together),
	// MaxCost (USD) and MaxDuration are the budgets; 0: off.
	MaxSteps    int           `mapstructure:"max_steps"`
	MaxTokens   int64         `mapstructure:"max_tokens"`
	MaxCost     float64       `mapstructure:"max_cost"`
	MaxDuration time.Duration `mapstructure:"max_duration"`
}

// Defaults are the thresholds of the rules that are on by default.
func Defaults() Config { return Config{LoopRepeats: 3, ErrorStreak: 3, Retries: 3} }

// Validate checks the thresholds.
func (c Config) Validate() error {
	switch {
	case c.LoopRepeats < 2:
		return fmt.Errorf("findings::loop_repeats must be at least 2, got %d", c.LoopRepeats)
	case c.ErrorStreak < 2:
		return fmt.Errorf("findings::error_streak must be at least 2, got %d", c.ErrorStreak)
	case c.Retries < 1:
		return fmt.Errorf("findings::retries must be at least 1, got %d", c.Retries)
	case c.MaxSteps < 0 || c.MaxTokens < 0 || c.MaxCost < 0 || c.MaxDuration < 0:
		return fmt.Errorf("findings: max_steps, max_tokens, max_cost and max_duration must not be negative (0: off)")
	}
	return nil
}

// Finding is one thing that went wrong in a turn, with its evidence.
type Finding struct {
	// Name is the rule's (ToolLoop, …).
	Name string `json:"name"`
	// Explanation is one sentence a person understands.
	Explanation string `json:"explanation"`
	// Seqs are the events that show it, in order; CallIDs the tool calls.
	Seqs    []int64  `json:"seqs"`
	CallIDs []string `json:"call_ids,omitempty"`
}

// call is one tool call of the turn.
type call struct {
	id, name string
	seq      int64
	// args are the call's arguments as written, kept (up to maxKeptArgs)
	// to be compared as canonical JSON when the call may be part of a loop;
	// rawArgs is their hash as written.
	args    string
	rawArgs uint64
	// answered: a result came, at resultSeq, with the content hash result.
	answered  bool
	resultSeq int64
	result    uint64
}

// maxKeptArgs bounds the arguments kept per call for the canonical
// comparison: longer ones compare as written.
const maxKeptArgs = 4096

type loopKey struct {
	name         string
	args, result uint64
}

// Turn gathers one turn's evidence as the engine applies its events.
type Turn struct {
	calls []*call
	byID  map[string]*call
	// streak is the failed results in a row so far; worst the longest.
	streak, worst []evidence
	// retries are the seqs of the turn's llm/retry-started events.
	retries []int64
}

type evidence struct {
	callID string
	seq    int64 // the result's
	call   int64 // its call's seq, -1 unknown
}

// NewTurn starts a turn's evidence.
func NewTurn() *Turn {
	return &Turn{byID: map[string]*call{}}
}

// Call records a tool/call: its seq, id, tool name and raw arguments.
func (t *Turn) Call(seq int64, id, name, args string) {
	c := &call{id: strings.Clone(id), name: strings.Clone(name), seq: seq, rawArgs: hashString(args)}
	if len(args) <= maxKeptArgs {
		c.args = strings.Clone(args)
	}
	t.calls = append(t.calls, c)
	if id != "" {
		t.byID[c.id] = c
	}
}

// Result records a tool/result: its seq, the call it answers, whether it
// failed, and its content's hash (sessionlog.Detail.ResultHash).
func (t *Turn) Result(seq int64, callID string, failed bool, result uint64) {
	c := t.byID[callID]
	ev := evidence{callID: strings.Clone(callID), seq: seq, call: -1}
	if c != nil && !c.answered {
		c.answered, c.resultSeq, c.result = true, seq, result
		ev.call = c.seq
	}
	if !failed {
		t.streak = t.streak[:0]
		return
	}
	t.streak = append(t.streak, ev)
	if len(t.streak) > len(t.worst) {
		t.worst = append(t.worst[:0], t.streak...)
	}
}

// Retry records an llm/retry-started: dsh retried a failed model call.
func (t *Turn) Retry(seq int64) { t.retries = append(t.retries, seq) }

// loops groups the answered calls by tool, arguments and result, in the
// order each group was first seen: first by tool and result (cheap), then,
// in the groups large enough to be a loop, by canonical arguments.
func (t *Turn) loops(repeats int) [][]*call {
	type nameResult struct {
		name   string
		result uint64
	}
	byResult := map[nameResult][]*call{}
	var order []nameResult
	for _, c := range t.calls {
		if !c.answered {
			continue
		}
		k := nameResult{c.name, c.result}
		if _, seen := byResult[k]; !seen {
			order = append(order, k)
		}
		byResult[k] = append(byResult[k], c)
	}
	var out [][]*call
	for _, k := range order {
		group := byResult[k]
		if len(group) < repeats {
			continue
		}
		byArgs := map[loopKey][]*call{}
		var keys []loopKey
		for _, c := range group {
			a := c.rawArgs
			if c.args != "" {
				a = canonicalHash(c.args)
			}
			lk := loopKey{c.name, a, c.result}
			if _, seen := byArgs[lk]; !seen {
				keys = append(keys, lk)
			}
			byArgs[lk] = append(byArgs[lk], c)
		}
		for _, lk := range keys {
			if len(byArgs[lk]) >= repeats {
				out = append(out, byArgs[lk])
			}
		}
	}
	return out
}

// Totals are what a closed turn's budgets are held against.
type Totals struct {
	// Ended: dsh ended the turn (turn/end), as opposed to a dangling one.
	Ended bool
	// EndSeq is the turn/end's seq (-1 for a dangling turn).
	EndSeq   int64
	Steps    int
	Tokens   int64
	Cost     float64
	Duration time.Duration
	// StartSeq is the turn/start's seq.
	StartSeq int64
}

// Close is the turn's findings, in the order of Names.
func (t *Turn) Close(cfg Config, tot Totals) []Finding {
	if cfg.LoopRepeats == 0 && cfg.ErrorStreak == 0 && cfg.Retries == 0 {
		cfg = Defaults()
	}
	var out []Finding
	for _, calls := range t.loops(cfg.LoopRepeats) {
		f := Finding{Name: ToolLoop, Explanation: fmt.Sprintf("%s was called %d times with the same arguments and got the same result each time.",
			calls[0].name, len(calls))}
		for _, c := range calls {
			f.Seqs = append(f.Seqs, c.seq, c.resultSeq)
			f.CallIDs = append(f.CallIDs, c.id)
		}
		slices.Sort(f.Seqs)
		out = append(out, f)
	}
	if len(t.worst) >= cfg.ErrorStreak {
		f := Finding{Name: ToolErrorStreak, Explanation: fmt.Sprintf("%d tool calls in a row failed, with no successful one between them.", len(t.worst))}
		for _, e := range t.worst {
			if e.call >= 0 {
				f.Seqs = append(f.Seqs, e.call)
			}
			f.Seqs = append(f.Seqs, e.seq)
			f.CallIDs = append(f.CallIDs, e.callID)
		}
		slices.Sort(f.Seqs)
		out = append(out, f)
	}
	if tot.Ended {
		var f Finding
		for _, c := range t.calls {
			if !c.answered {
				f.Seqs = append(f.Seqs, c.seq)
				f.CallIDs = append(f.CallIDs, c.id)
			}
		}
		if len(f.CallIDs) > 0 {
			f.Name = UnansweredToolCall
			f.Explanation = fmt.Sprintf("dsh ended the turn while %s never got a result.", plural(len(f.CallIDs), "tool call", "tool calls"))
			if tot.EndSeq >= 0 {
				f.Seqs = append(f.Seqs, tot.EndSeq)
			}
			out = append(out, f)
		}
	}
	if cfg.Retries > 0 && len(t.retries) >= cfg.Retries {
		out = append(out, Finding{Name: ModelRetries, Seqs: slices.Clone(t.retries),
			Explanation: fmt.Sprintf("dsh retried %d failed model calls in the turn.", len(t.retries))})
	}
	span := []int64{tot.StartSeq}
	if tot.EndSeq >= 0 {
		span = append(span, tot.EndSeq)
	}
	if cfg.MaxSteps > 0 && tot.Steps > cfg.MaxSteps {
		out = append(out, Finding{Name: OverSteps, Seqs: span,
			Explanation: fmt.Sprintf("The turn took %d steps, over the budget of %d.", tot.Steps, cfg.MaxSteps)})
	}
	if cfg.MaxTokens > 0 && tot.Tokens > cfg.MaxTokens {
		out = append(out, Finding{Name: OverTokens, Seqs: span,
			Explanation: fmt.Sprintf("The turn used %d tokens, over the budget of %d.", tot.Tokens, cfg.MaxTokens)})
	}
	if cfg.MaxCost > 0 && tot.Cost > cfg.MaxCost {
		out = append(out, Finding{Name: OverCost, Seqs: span,
			Explanation: fmt.Sprintf("The turn cost $%.6g, over the budget of $%.6g.", tot.Cost, cfg.MaxCost)})
	}
	if cfg.MaxDuration > 0 && tot.Duration > cfg.MaxDuration {
		out = append(out, Finding{Name: OverDuration, Seqs: span,
			Explanation: fmt.Sprintf("The turn took %s, over the budget of %s.", tot.Duration, cfg.MaxDuration)})
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// canonicalHash hashes JSON text in canonical form (keys sorted, no
// insignificant space), so that the same arguments written differently
// compare equal; text that is no JSON is hashed as it is.
func canonicalHash(s string) uint64 {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		if b, err := json.Marshal(v); err == nil {
			return hashString(string(b))
		}
	}
	return hashString(s)
}

// hashString is the FNV-1a hash of s.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
