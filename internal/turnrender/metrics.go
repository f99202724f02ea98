package turnrender

import (
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// Metric names. The gen_ai.* ones follow the OpenTelemetry GenAI semantic
// conventions v0.1.0 (README, "Conventions"); the token counters stay
// dsh.* while the conventions' token metrics are still being reworked.
const (
	MetricTurns             = "dsh.turns"
	MetricTurnDuration      = "dsh.turn.duration"
	MetricTurnSteps         = "dsh.turn.steps"
	MetricTurnsOpen         = "dsh.turns.open"
	MetricUsageTokens       = "dsh.usage.tokens"
	MetricReasoningTokens   = "dsh.usage.reasoning_tokens"
	MetricUsageCost         = "dsh.usage.cost"
	MetricInferenceDuration = "gen_ai.client.inference.duration"
	MetricInferenceTTFC     = "gen_ai.client.inference.time_to_first_chunk"
	MetricAgentDuration     = "gen_ai.invoke_agent.duration"
	MetricAgentInferences   = "gen_ai.invoke_agent.inference_calls"
	MetricAgentToolCalls    = "gen_ai.invoke_agent.tool_calls"
	MetricToolCalls         = "dsh.tool.calls"
	MetricToolDuration      = "gen_ai.execute_tool.duration"
	MetricSessionEvents     = "dsh.session.events"
	MetricSessionViolations = "dsh.session.violations"
	MetricTurnsClosedLate   = "dsh.turns.closed_late"
	MetricTurnFindings      = "dsh.turn.findings"
)

// Token types of dsh.usage.tokens and dsh.usage.cost: disjoint, so that
// they add up — uncached_input + cache_read + cache_write is what the
// spans call gen_ai.usage.input_tokens.
const (
	TokenUncachedInput = "uncached_input"
	TokenCacheRead     = "cache_read"
	TokenCacheWrite    = "cache_write"
	TokenOutput        = "output"
)

// OtherValue replaces attribute values beyond the cardinality cap.
const OtherValue = "other"

var (
	durationBounds = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36, 1310.72}
	stepBounds     = []float64{1, 2, 3, 5, 8, 13, 21, 34, 55, 89}
	callBounds     = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}
)

type metricKind int

const (
	kindCounter metricKind = iota
	kindHistogram
	kindDoubleCounter
)

type metricDef struct {
	name, desc, unit string
	kind             metricKind
	bounds           []float64
}

var metricDefs = []metricDef{
	{MetricTurns, "Turns closed, by TurnEndReason kind (dangling for turns dsh never closed).", "{turn}", kindCounter, nil},
	{MetricTurnDuration, "Turn wall time, turn/start to turn/end.", "s", kindHistogram, durationBounds},
	{MetricTurnSteps, "Steps per turn.", "{step}", kindHistogram, stepBounds},
	{MetricAgentDuration, "Agent invocation (turn) duration, turn/start to turn/end.", "s", kindHistogram, durationBounds},
	{MetricAgentInferences, "Model calls per agent invocation (turn).", "{inference_call}", kindHistogram, callBounds},
	{MetricAgentToolCalls, "Tool calls per agent invocation (turn).", "{tool_call}", kindHistogram, callBounds},
	{MetricUsageTokens, "Tokens spent, disjoint by type: uncached_input, cache_read and cache_write add up to the prompt; output.", "{token}", kindCounter, nil},
	{MetricReasoningTokens, "Reasoning tokens reported by the provider (a part of output tokens).", "{token}", kindCounter, nil},
	{MetricUsageCost, "Cost of model calls in USD, by the same disjoint token types, for models the price table knows.", "{USD}", kindDoubleCounter, nil},
	{MetricInferenceDuration, "Model call (inference) duration.", "s", kindHistogram, durationBounds},
	{MetricInferenceTTFC, "Time from the model request to its first non-empty chunk.", "s", kindHistogram, durationBounds},
	{MetricToolCalls, "Tool calls by outcome.", "{call}", kindCounter, nil},
	{MetricToolDuration, "Tool execution duration, tool/call to tool/result.", "s", kindHistogram, durationBounds},
	{MetricSessionEvents, "Session events seen, each once.", "{event}", kindCounter, nil},
	{MetricSessionViolations, "Format invariant violations seen.", "{violation}", kindCounter, nil},
	{MetricTurnsClosedLate, "Turns closed as dangling that dsh ended later, by their real TurnEndReason and how they had dangled.",
		"{turn}", kindCounter, nil},
	{MetricTurnFindings, "Findings of closed turns (what went wrong: tool loops, error streaks, unanswered calls, budgets), by finding.",
		"{finding}", kindCounter, nil},
}

// kv is one metric attribute; every metric attribute is a string.
type kv struct{ k, v string }

// attrSet is a data point's attributes, by value: recording into an
// existing series allocates nothing.
type attrSet struct {
	n  int
	kv [5]kv
}

func attrs(pairs ...kv) attrSet {
	var s attrSet
	s.n = copy(s.kv[:], pairs)
	return s
}

type point struct {
	attrs attrSet
	start time.Time
	// counter
	value  int64
	fvalue float64
	// histogram
	counts    []uint64
	count     uint64
	sum       float64
	min, max  float64
	exemplars []exemplar
}

type exemplar struct {
	traceID pcommon.TraceID
	spanID  pcommon.SpanID
	at      int64 // unix nanos
	value   float64
}

// maxExemplars per histogram point per flush.
const maxExemplars = 4

// Metrics holds the cumulative aggregates of what an engine closed
// (docs/design.md §5): the engine's Observer, rendered by AppendTo.
type Metrics struct {
	maxValues int
	admitted  map[string]map[string]struct{}
	series    map[string]map[string]*point // metric name → attribute key → point
	defs      map[string]*metricDef
	keyBuf    []byte
	// eventPoints maps a raw event type to its dsh.session.events point
	// (after the cap), so counting an event is one lookup; lastEvent is the
	// entry used last (runs of one type, chunks, need no lookup at all).
	eventPoints map[string]*eventPoint
	lastEvent   *eventPoint
	// byClient adds enduser.id to dsh.turns (SetByClient).
	byClient bool
}

// eventPoint is an entry of eventPoints: its own copy of the raw type, and
// the point.
type eventPoint struct {
	typ string
	p   *point
}

// The Metrics are an Observer of the engine: they aggregate what it sees.
var _ turnengine.Observer = (*Metrics)(nil)

// Event counts an event applied (dsh.session.events).
func (m *Metrics) Event(eventType string, now time.Time) { m.recordEvent(eventType, now) }

// Violation counts an invariant violation (dsh.session.violations).
func (m *Metrics) Violation(code string, now time.Time) { m.recordViolation(code, now) }

// Closed aggregates what the engine closed: a turn, a live step fragment
// (counted unless Replayed), or a late close. The engine priced it before.
func (m *Metrics) Closed(t *turnengine.Turn, now time.Time) {
	switch {
	case t.Late != nil:
		m.recordLateClose(t, now)
	case t.Fragment:
		m.recordFragment(t, now)
	default:
		m.recordTurn(t, now)
	}
}

// DefaultMaxAttributeValues is the default cap on the distinct values of
// a capped dimension (model, provider, tool, event type, agent).
const DefaultMaxAttributeValues = 100

// NewMetrics returns empty metrics capping each dimension at maxValues
// distinct values (DefaultMaxAttributeValues when 0); past the cap a
// value is reported as OtherValue.
func NewMetrics(maxValues int) *Metrics {
	m := newMetrics()
	m.SetMaxValues(maxValues)
	return m
}

func newMetrics() *Metrics {
	m := &Metrics{maxValues: DefaultMaxAttributeValues, admitted: map[string]map[string]struct{}{},
		series: map[string]map[string]*point{}, defs: map[string]*metricDef{},
		eventPoints: map[string]*eventPoint{}}
	for i, d := range metricDefs {
		m.series[d.name] = map[string]*point{}
		m.defs[d.name] = &metricDefs[i]
	}
	return m
}

// SetMaxValues sets the cap on distinct model, tool and event-type values.
func (m *Metrics) SetMaxValues(n int) {
	if n > 0 {
		m.maxValues = n
		clear(m.eventPoints)
		m.lastEvent = nil
	}
}

// SetByClient makes dsh.turns count by the client that wrote each turn's
// session too (enduser.id, capped like the other dimensions): off by
// default, as every client adds series.
func (m *Metrics) SetByClient(on bool) { m.byClient = on }

// capped admits a value of a capped dimension, or returns OtherValue.
func (m *Metrics) capped(dim, value string) string {
	set := m.admitted[dim]
	if set == nil {
		set = map[string]struct{}{}
		m.admitted[dim] = set
	}
	if _, ok := set[value]; ok {
		return value
	}
	if len(set) >= m.maxValues {
		return OtherValue
	}
	value = strings.Clone(value) // kept: no view into a row
	set[value] = struct{}{}
	return value
}

func (m *Metrics) point(name string, a attrSet, now time.Time) *point {
	buf := m.keyBuf[:0]
	for _, p := range a.kv[:a.n] {
		buf = append(buf, p.k...)
		buf = append(buf, 0)
		buf = append(buf, p.v...)
		buf = append(buf, 0)
	}
	m.keyBuf = buf
	series := m.series[name]
	if p := series[string(buf)]; p != nil { // no allocation for the lookup
		return p
	}
	for i := range a.kv[:a.n] { // kept: no views into rows
		a.kv[i].v = strings.Clone(a.kv[i].v)
	}
	p := &point{attrs: a, start: now}
	series[string(buf)] = p
	return p
}

func (m *Metrics) add(name string, n int64, a attrSet, now time.Time) {
	m.point(name, a, now).value += n
}

func (m *Metrics) observe(name string, v float64, ex exemplar, a attrSet, now time.Time) {
	p := m.point(name, a, now)
	bounds := m.defs[name].bounds
	if p.counts == nil {
		p.counts = make([]uint64, len(bounds)+1)
		p.min, p.max = v, v
	}
	p.counts[sort.SearchFloat64s(bounds, v)]++
	p.count++
	p.sum += v
	p.min, p.max = min(p.min, v), max(p.max, v)
	if !ex.traceID.IsEmpty() {
		ex.value = v
		if len(p.exemplars) >= maxExemplars {
			copy(p.exemplars, p.exemplars[1:])
			p.exemplars = p.exemplars[:maxExemplars-1]
		}
		p.exemplars = append(p.exemplars, ex)
	}
}

func (m *Metrics) recordEvent(typ string, now time.Time) {
	if e := m.lastEvent; e != nil && e.typ == typ {
		e.p.value++
		return
	}
	if e := m.eventPoints[typ]; e != nil {
		e.p.value++
		m.lastEvent = e
		return
	}
	p := m.point(MetricSessionEvents, attrs(kv{semconv.EventType, m.capped(semconv.EventType, typ)}), now)
	p.value++
	// Types past the cap share the "other" point; remember a bounded
	// number of raw types, so that hostile input cannot grow the map.
	if len(m.eventPoints) < 4*m.maxValues {
		e := &eventPoint{typ: strings.Clone(typ), p: p}
		m.eventPoints[e.typ] = e
		m.lastEvent = e
	}
}

// recordViolation counts one invariant violation by its code.
func (m *Metrics) recordViolation(code string, now time.Time) {
	m.add(MetricSessionViolations, 1, attrs(kv{semconv.DshViolation, code}), now)
}

// recordTurn aggregates a closed turn: its outcome, its model calls and its
// tool calls. The steps of it emitted live were counted then (live.go).
func (m *Metrics) recordTurn(t *turnengine.Turn, now time.Time) {
	reason := reasonKind(t)
	errType := ""
	if t.Reason.Failure != nil {
		errType = t.Reason.Failure.Code
	}
	trace := TraceID(t.SessionID, t.Number)
	agent := kv{semconv.GenAIAgentName, m.capped("agent", t.Agent)}
	turns := attrs(kv{semconv.DshTurnEndReason, reason}, agent, kv{semconv.ErrorType, errType})
	if m.byClient {
		turns = attrs(kv{semconv.DshTurnEndReason, reason}, agent, kv{semconv.ErrorType, errType},
			kv{semconv.EnduserID, m.capped("client", clientid.Client(t.SessionID))})
	}
	m.add(MetricTurns, 1, turns, now)
	// Every finding's series exists from an agent's first turn, at zero
	// until the finding is seen: a rate or alert on it has a series to
	// evaluate, as dsh.turns has.
	for _, name := range findings.Names {
		n := int64(0)
		for _, f := range t.Findings {
			if f.Name == name {
				n++
			}
		}
		m.add(MetricTurnFindings, n, attrs(kv{semconv.DshFinding, name}, agent), now)
	}
	ex := exemplar{traceID: trace, spanID: TurnSpanID(t.SessionID, t.Number), at: msToNanos(t.EndTime)}
	byReason := attrs(kv{semconv.DshTurnEndReason, reason})
	m.observe(MetricTurnDuration, seconds(t.EndTime-t.StartTime), ex, byReason, now)
	m.observe(MetricTurnSteps, float64(t.NumSteps()), ex, byReason, now)
	agentErr := ""
	if turnFailed(reason) {
		agentErr = errType
		if agentErr == "" {
			agentErr = reason
		}
	}
	op := kv{semconv.GenAIOperationName, "invoke_agent"}
	m.observe(MetricAgentDuration, seconds(t.EndTime-t.StartTime), ex, attrs(op, agent, kv{semconv.ErrorType, agentErr}), now)
	// The steps emitted live were counted when they went out.
	inferences, tools := t.LiveModelCalls, t.LiveToolCalls
	for _, st := range t.Steps {
		inferences += len(st.Attempts)
		tools += len(st.Tools)
		for _, a := range st.Attempts {
			m.recordAttempt(t, st, a, trace, now)
		}
		for _, tc := range st.Tools {
			m.recordTool(t, st, tc, trace, now)
		}
	}
	m.observe(MetricAgentInferences, float64(inferences), ex, attrs(op, agent), now)
	m.observe(MetricAgentToolCalls, float64(tools), ex, attrs(op, agent), now)
}

// turnFailed reports whether a turn's end reason is a failure: its span's
// status is an error.
func turnFailed(reason string) bool {
	return reason == "error" || reason == "interrupted" || reason == "dangling"
}

// recordFragment aggregates the model and tool calls of a live step
// fragment, unless it is Replayed (counted when it first went out).
func (m *Metrics) recordFragment(f *turnengine.Turn, now time.Time) {
	if f.Replayed {
		return
	}
	trace := TraceID(f.SessionID, f.Number)
	for _, st := range f.Steps {
		for _, a := range st.Attempts {
			m.recordAttempt(f, st, a, trace, now)
		}
		for _, tc := range st.Tools {
			m.recordTool(f, st, tc, trace, now)
		}
	}
}

// recordLateClose counts a late close (dsh.turns.closed_late) by its real
// end reason and how the turn had dangled.
func (m *Metrics) recordLateClose(t *turnengine.Turn, now time.Time) {
	m.add(MetricTurnsClosedLate, 1, attrs(kv{semconv.DshTurnEndReason, reasonKind(t)}, kv{semconv.DshDanglingCause, t.Late.DanglingCause},
		kv{semconv.GenAIAgentName, m.capped("agent", t.Agent)}), now)
}

func (m *Metrics) recordAttempt(t *turnengine.Turn, st *turnengine.Step, a *turnengine.Attempt, trace pcommon.TraceID, now time.Time) {
	provider := kv{semconv.GenAIProviderName, m.capped("provider", ProviderName(a.Provider))}
	model := kv{semconv.GenAIRequestModel, m.capped("model", a.Model)}
	op := kv{semconv.GenAIOperationName, "chat"}
	ex := exemplar{traceID: trace, spanID: ChatSpanID(t.SessionID, t.Number, st.Number, a.Index), at: msToNanos(a.EndTime)}
	errType := ""
	if a.Failed() {
		errType = "_OTHER"
		if a.Failure != nil && a.Failure.Code != "" {
			errType = a.Failure.Code
		}
	}
	m.observe(MetricInferenceDuration, seconds(a.EndTime-a.StartTime), ex,
		attrs(op, provider, model, kv{semconv.ErrorType, errType}), now)
	if a.HasFirstChunk {
		m.observe(MetricInferenceTTFC, seconds(a.FirstChunkTime-a.StartTime), ex, attrs(op, provider, model), now)
	}
	if u := a.Usage; u != nil {
		for _, tt := range [...]struct {
			typ  string
			n    int64
			cost float64
		}{{TokenUncachedInput, u.InputTokens, a.Cost.Input}, {TokenCacheRead, u.CacheReadTokens, a.Cost.CacheRead},
			{TokenCacheWrite, u.CacheWriteTokens, a.Cost.CacheWrite}, {TokenOutput, u.OutputTokens, a.Cost.Output}} {
			if tt.n > 0 {
				typ := kv{semconv.GenAITokenType, tt.typ}
				m.add(MetricUsageTokens, tt.n, attrs(typ, provider, model), now)
				if a.Priced {
					m.point(MetricUsageCost, attrs(typ, provider, model), now).fvalue += tt.cost
				}
			}
		}
		if u.ReasoningTokens > 0 {
			m.add(MetricReasoningTokens, u.ReasoningTokens, attrs(provider, model), now)
		}
	}
}

func (m *Metrics) recordTool(t *turnengine.Turn, st *turnengine.Step, tc *turnengine.ToolCall, trace pcommon.TraceID, now time.Time) {
	name := kv{semconv.GenAIToolName, m.capped("tool", tc.Name)}
	m.add(MetricToolCalls, 1, attrs(name, kv{semconv.DshToolOutcome, tc.Outcome}), now)
	if tc.Outcome != "unknown" {
		errType := ""
		if tc.Outcome == "error" {
			errType = toolErrorType(tc)
		}
		ex := exemplar{traceID: trace, spanID: ToolSpanID(t.SessionID, t.Number, st.Number, tc.CallID, ""), at: msToNanos(tc.EndTime)}
		m.observe(MetricToolDuration, seconds(tc.EndTime-tc.StartTime), ex,
			attrs(kv{semconv.GenAIOperationName, "execute_tool"}, name, kv{semconv.GenAIToolType, "function"}, kv{semconv.ErrorType, errType}), now)
	}
}

// AppendTo writes every series, cumulative, into sm at time now, with the
// open-turns gauge. Each histogram point keeps its latest exemplars across
// flushes (a scrape between two flushes still sees them); new observations
// replace the oldest.
func (m *Metrics) AppendTo(sm pmetric.ScopeMetrics, now time.Time, openTurns int) {
	ts := pcommon.NewTimestampFromTime(now)
	for _, d := range metricDefs {
		pts := m.series[d.name]
		if len(pts) == 0 {
			continue
		}
		mt := sm.Metrics().AppendEmpty()
		mt.SetName(d.name)
		mt.SetDescription(d.desc)
		mt.SetUnit(d.unit)
		points := sortedPoints(pts)
		switch d.kind {
		case kindCounter, kindDoubleCounter:
			appendSum(mt, d, points, ts)
		case kindHistogram:
			appendHistogram(mt, d, points, ts)
		}
	}
	g := sm.Metrics().AppendEmpty()
	g.SetName(MetricTurnsOpen)
	g.SetDescription("Turns open now.")
	g.SetUnit("{turn}")
	dp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetIntValue(int64(openTurns))
}

// sortedPoints are a metric's points in the order of their attribute keys,
// so every flush writes them in the same order.
func sortedPoints(pts map[string]*point) []*point {
	keys := make([]string, 0, len(pts))
	for k := range pts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*point, len(keys))
	for i, k := range keys {
		out[i] = pts[k]
	}
	return out
}

// appendSum writes a cumulative, monotonic counter (integer or double).
func appendSum(mt pmetric.Metric, d metricDef, points []*point, ts pcommon.Timestamp) {
	sum := mt.SetEmptySum()
	sum.SetIsMonotonic(true)
	sum.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, p := range points {
		dp := sum.DataPoints().AppendEmpty()
		putKVs(dp.Attributes(), p.attrs)
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(p.start))
		dp.SetTimestamp(ts)
		if d.kind == kindDoubleCounter {
			dp.SetDoubleValue(p.fvalue)
		} else {
			dp.SetIntValue(p.value)
		}
	}
}

// appendHistogram writes a cumulative histogram with each point's latest
// exemplars.
func appendHistogram(mt pmetric.Metric, d metricDef, points []*point, ts pcommon.Timestamp) {
	h := mt.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for _, p := range points {
		dp := h.DataPoints().AppendEmpty()
		putKVs(dp.Attributes(), p.attrs)
		dp.SetStartTimestamp(pcommon.NewTimestampFromTime(p.start))
		dp.SetTimestamp(ts)
		dp.ExplicitBounds().FromRaw(d.bounds)
		dp.BucketCounts().FromRaw(p.counts)
		dp.SetCount(p.count)
		dp.SetSum(p.sum)
		dp.SetMin(p.min)
		dp.SetMax(p.max)
		for _, ex := range p.exemplars {
			e := dp.Exemplars().AppendEmpty()
			e.SetTraceID(ex.traceID)
			e.SetSpanID(ex.spanID)
			e.SetTimestamp(pcommon.Timestamp(ex.at))
			e.SetDoubleValue(ex.value)
		}
	}
}

func putKVs(m pcommon.Map, a attrSet) {
	for _, p := range a.kv[:a.n] {
		if p.v != "" { // an empty value is no attribute (error.type on success)
			m.PutStr(p.k, p.v)
		}
	}
}
