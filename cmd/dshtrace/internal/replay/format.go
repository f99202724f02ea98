package replay

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// When and dur write times: event times in UTC to the millisecond,
// durations in the unit that reads best.
func when(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") + " UTC"
}

// clockLayout writes an event time of day.
const clockLayout = "15:04:05.000"

func dur(ms int64) string {
	if ms < 0 {
		return "−" + dur(-ms)
	}
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return strconv.FormatInt(ms, 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + " min " + strconv.Itoa(int(d.Seconds())%60) + " s"
	}
	return strconv.Itoa(int(d.Hours())) + " h " + strconv.Itoa(int(d.Minutes())%60) + " min"
}

// num writes an integer with thousands separators.
func num(n any) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int64:
		v = x
	}
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// usd writes a cost in dollars, without binary noise.
func usd(c pricing.Cost) string { return "$" + strconv.FormatFloat(c.Total(), 'f', -1, 64) }

func kb(n int) string {
	if n < 1024 {
		return strconv.Itoa(n) + " B"
	}
	return strconv.FormatFloat(float64(n)/1024, 'f', 1, 64) + " KB"
}

// tokens writes token totals as on the spans: "in" is the whole prompt,
// cache reads and writes included.
func tokens(t turnengine.Tokens) string {
	if !t.Reported {
		return "tokens not reported"
	}
	s := "in " + num(t.Input+t.CacheRead+t.CacheWrite)
	if t.CacheRead > 0 || t.CacheWrite > 0 {
		s += " (cache read " + num(t.CacheRead) + ", write " + num(t.CacheWrite) + ")"
	}
	s += " · out " + num(t.Output)
	if t.Reasoning > 0 {
		s += " (reasoning " + num(t.Reasoning) + ")"
	}
	return s
}

// reasonLabel says why a turn ended: the reason's kind with its abort cause
// or failure code; a dangling turn with its cause and, when dsh closed it
// after all, how.
func reasonLabel(t *Turn) string {
	if t.Dangling() {
		s := "dangling (" + t.DanglingCause + ")"
		if t.Late != nil {
			s += ", closed late: " + kindLabel(t.LateReason)
		}
		return s
	}
	return kindLabel(t.Reason)
}

// kindLabel is a turn/end reason's kind with its abort cause or failure
// code.
func kindLabel(r sessionlog.Reason) string {
	switch {
	case r.Kind == "aborted" && r.Cause == "hook" && r.HookReason != "":
		return "aborted (hook: " + strconv.Quote(r.HookReason) + ")"
	case r.Kind == "aborted" && r.Cause != "":
		return "aborted (" + r.Cause + ")"
	case r.Kind == "error" && r.Failure != nil && r.Failure.Code != "":
		return "error (" + r.Failure.Code + ")"
	case r.Kind == "":
		return "unknown"
	}
	return r.Kind
}

func turnMeta(t *Turn) string {
	parts := []string{dur(t.End - t.StartTime), plural(len(t.Steps), "step")}
	calls := 0
	for _, st := range t.Steps {
		calls += len(st.Calls)
	}
	if calls > 0 {
		parts = append(parts, plural(calls, "call"))
	}
	if t.Usage.Reported {
		parts = append(parts, num(t.Usage.Input+t.Usage.CacheRead+t.Usage.CacheWrite+t.Usage.Output)+" tokens")
	}
	if t.PricedCalls > 0 {
		parts = append(parts, usd(t.Cost))
	}
	return strings.Join(parts, " · ")
}

// stepMeta sums a step's model calls.
func stepMeta(st *Step) string {
	var parts []string
	var model string
	var u turnengine.Tokens
	var c pricing.Cost
	priced := false
	for _, a := range st.Attempts {
		if a.Committed || model == "" {
			model = strings.Trim(a.Provider+"/"+a.Model, "/")
		}
		if a.Usage != nil {
			u.Reported = true
			u.Input += a.Usage.InputTokens
			u.Output += a.Usage.OutputTokens
			u.CacheRead += a.Usage.CacheReadTokens
			u.CacheWrite += a.Usage.CacheWriteTokens
			u.Reasoning += a.Usage.ReasoningTokens
		}
		if a.Priced {
			c, priced = c.Add(a.Cost), true
		}
	}
	if model != "" {
		parts = append(parts, model)
	}
	parts = append(parts, dur(st.EndTime-st.StartTime))
	if len(st.Attempts) > 1 {
		parts = append(parts, plural(len(st.Attempts), "attempt"))
	}
	if u.Reported {
		parts = append(parts, tokens(u))
	}
	if priced {
		parts = append(parts, usd(c))
	}
	return strings.Join(parts, " · ")
}

// attemptMeta describes one model call: model, finish, tokens, timing.
func attemptMeta(a *Attempt) string {
	parts := []string{strings.Trim(a.Provider+"/"+a.Model, "/")}
	if a.FinishKind != "" {
		parts = append(parts, "finish "+a.FinishKind)
	}
	if a.Interrupted {
		parts = append(parts, "interrupted")
	}
	if a.Usage != nil {
		parts = append(parts, tokens(turnengine.Tokens{Reported: true, Input: a.Usage.InputTokens, Output: a.Usage.OutputTokens,
			CacheRead: a.Usage.CacheReadTokens, CacheWrite: a.Usage.CacheWriteTokens, Reasoning: a.Usage.ReasoningTokens}))
	}
	parts = append(parts, dur(a.EndTime-a.StartTime))
	if a.HasFirstChunk {
		parts = append(parts, "first chunk after "+dur(a.FirstChunkTime-a.StartTime))
	}
	if a.Priced {
		parts = append(parts, usd(a.Cost))
	}
	return join(parts...)
}

// callMeta describes a call's outcome and latency.
func callMeta(c *Call) string {
	var parts []string
	if d, ok := c.Duration(); ok {
		parts = append(parts, dur(d))
	} else if c.NotStarted {
		parts = append(parts, "never started")
	}
	return strings.Join(parts, " · ")
}

// ReasonCount is an end reason and how many turns ended so.
type ReasonCount struct {
	Kind  string
	Count int
}

// reasons lists a session's end reasons, most frequent first.
func reasons(t Totals) []ReasonCount {
	var out []ReasonCount
	for k, n := range t.Reasons {
		out = append(out, ReasonCount{k, n})
	}
	slices.SortFunc(out, func(a, b ReasonCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// formatName says which format the session was read as.
func formatName(s *Session) string {
	f := s.Format
	switch {
	case f.Seed:
		return "seed dialect"
	case !f.Known:
		return "v0 (no evidence of a later version)"
	case s.Header != nil && s.Header.HasVersion:
		return "v" + strconv.Itoa(f.Version)
	}
	return "v" + strconv.Itoa(f.Version) + " (inferred: no header)"
}
