package turnrender

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Traces renders closed turns as OTLP traces: one trace per turn, one
// ResourceSpans per session (resource session.id and service.name = the
// agent), spans as docs/design.md §4 lays out. scope names the
// instrumentation scope of the spans: the component (or command) that
// emits them.
func Traces(scope string, turns []*turnengine.Turn) ptrace.Traces {
	return SampledTraces(scope, turns, nil)
}

// SampledTraces is Traces with each turn's spans carrying a W3C
// tracestate: state[i] for turns[i] (none where it is empty, or state is
// nil) — the sampling's threshold (internal/sampling).
func SampledTraces(scope string, turns []*turnengine.Turn, state []string) ptrace.Traces {
	td := ptrace.NewTraces()
	// Each session's span slice is sized once for all its turns: grown
	// turn by turn, it would be copied at every turn.
	type resource struct{ session, agent string }
	sizes := make(map[resource]int, 1)
	for _, t := range turns {
		sizes[resource{t.SessionID, t.Agent}] += spansOf(t)
	}
	bySession := make(map[resource]ptrace.SpanSlice, len(sizes))
	for i, t := range turns {
		key := resource{t.SessionID, t.Agent}
		spans, ok := bySession[key]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", t.Agent)
			rs.Resource().Attributes().PutStr(semconv.SessionID, clientid.Session(t.SessionID))
			if c := clientid.Client(t.SessionID); c != "" {
				rs.Resource().Attributes().PutStr(semconv.EnduserID, c)
			}
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(scope)
			spans = ss.Spans()
			spans.EnsureCapacity(sizes[key])
			bySession[key] = spans
		}
		from := spans.Len()
		switch {
		case t.Late != nil:
			appendLateClose(spans, t)
		case t.Fragment:
			appendSteps(spans, t, TraceID(t.SessionID, t.Number), TurnSpanID(t.SessionID, t.Number))
		default:
			appendTurn(spans, t)
		}
		if i < len(state) && state[i] != "" {
			for j := from; j < spans.Len(); j++ {
				spans.At(j).TraceState().FromRaw(state[i])
			}
		}
	}
	return td
}

// SpanCount is the number of spans Traces renders for t.
func SpanCount(t *turnengine.Turn) int { return spansOf(t) }

// spansOf is the number of spans Traces renders for t: a late close is
// one span, a live step fragment its steps' spans without the root.
func spansOf(t *turnengine.Turn) int {
	switch {
	case t.Late != nil:
		return 1
	case t.Fragment:
		return spanCount(t) - 1
	}
	return spanCount(t)
}

// spanCount is the number of spans appendTurn adds for t.
func spanCount(t *turnengine.Turn) int {
	n := 1
	var tools func(tcs []*turnengine.ToolCall)
	tools = func(tcs []*turnengine.ToolCall) {
		for _, tc := range tcs {
			n++
			tools(tc.SubCalls)
		}
	}
	for _, st := range t.Steps {
		n += 1 + len(st.Attempts)
		tools(st.Tools)
	}
	return n
}

func ts(ms int64) pcommon.Timestamp { return pcommon.Timestamp(msToNanos(ms)) }

func appendTurn(spans ptrace.SpanSlice, t *turnengine.Turn) {
	trace := TraceID(t.SessionID, t.Number)
	root := TurnSpanID(t.SessionID, t.Number)
	sp := spans.AppendEmpty()
	sp.SetTraceID(trace)
	sp.SetSpanID(root)
	sp.SetName("invoke_agent " + t.Agent)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(ts(t.StartTime))
	sp.SetEndTimestamp(ts(t.EndTime))
	a := sp.Attributes()
	a.EnsureCapacity(19) // the attributes below, allocated once
	a.PutStr(semconv.GenAIOperationName, "invoke_agent")
	a.PutStr(semconv.GenAIAgentName, t.Agent)
	a.PutBool(semconv.GenAIInvocationIsNested, t.Nested)
	a.PutStr(semconv.GenAIConversationID, clientid.Session(t.SessionID))
	a.PutStr(semconv.SessionID, clientid.Session(t.SessionID))
	a.PutInt(semconv.DshTurn, t.Number)
	reason := reasonKind(t)
	putTurnEnd(a, t, reason)
	a.PutInt(semconv.DshTurnSteps, int64(t.NumSteps()))
	putTurnUsage(a, t)
	a.PutInt(semconv.DshEventSeq, t.StartSeq)
	if t.Clamped {
		a.PutBool(semconv.DshTimeClamped, true)
	}
	setTurnStatus(sp, t, reason)
	if t.Number > 1 {
		l := sp.Links().AppendEmpty()
		l.SetTraceID(TraceID(t.SessionID, t.Number-1))
		l.SetSpanID(TurnSpanID(t.SessionID, t.Number-1))
		l.Attributes().PutStr(semconv.DshLink, "previous_turn")
	}
	appendEvents(sp, t.Events, "")
	appendFindings(sp, t)
	appendSteps(spans, t, trace, root)
}

// appendFindings puts a turn's findings on its root span: one
// gen_ai.evaluation.result event each, with its evidence, and a boolean
// attribute dsh.finding.<name> per finding name.
func appendFindings(sp ptrace.Span, t *turnengine.Turn) {
	for _, f := range t.Findings {
		sp.Attributes().PutBool(semconv.DshFindingPrefix+f.Name, true)
		ev := sp.Events().AppendEmpty()
		ev.SetName(semconv.GenAIEvaluationResult)
		ev.SetTimestamp(ts(t.EndTime))
		a := ev.Attributes()
		a.PutStr(semconv.GenAIEvaluationName, f.Name)
		a.PutStr(semconv.GenAIEvaluationExplanation, f.Explanation)
		seqs := a.PutEmptySlice(semconv.DshFindingSeqs)
		for _, s := range f.Seqs {
			seqs.AppendEmpty().SetInt(s)
		}
		if len(f.CallIDs) > 0 {
			ids := a.PutEmptySlice(semconv.DshFindingCallIDs)
			for _, id := range f.CallIDs {
				ids.AppendEmpty().SetStr(id)
			}
		}
	}
}

// putTurnEnd puts why the turn ended: its end reason, an abort's cause
// and hook reason, a failure's code, a dangling turn's cause.
func putTurnEnd(a pcommon.Map, t *turnengine.Turn, reason string) {
	a.PutStr(semconv.DshTurnEndReason, reason)
	if t.Reason.Cause != "" {
		a.PutStr(semconv.DshTurnAbortCause, t.Reason.Cause)
	}
	if t.Reason.HookReason != "" {
		a.PutStr(semconv.DshTurnAbortHookReason, t.Reason.HookReason)
	}
	if t.Reason.Failure != nil && t.Reason.Failure.Code != "" {
		a.PutStr(semconv.ErrorType, t.Reason.Failure.Code)
	}
	if t.DanglingCause != "" {
		a.PutStr(semconv.DshDanglingCause, t.DanglingCause)
	}
}

// setTurnStatus marks a turn that failed, was interrupted or never ended
// (docs/design.md §4.3).
func setTurnStatus(sp ptrace.Span, t *turnengine.Turn, reason string) {
	switch reason {
	case "error":
		msg := "turn failed"
		if t.Reason.Failure != nil && t.Reason.Failure.Message != "" {
			msg = t.Reason.Failure.Message
		}
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(msg)
	case "interrupted":
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("turn interrupted (closed by crash repair)")
	case "dangling":
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("turn never ended: closed as dangling (" + t.DanglingCause + ")")
	}
}

// appendSteps renders a turn's steps, each with its model and tool calls,
// under the turn's root span.
func appendSteps(spans ptrace.SpanSlice, t *turnengine.Turn, trace pcommon.TraceID, root pcommon.SpanID) {
	for _, st := range t.Steps {
		stepID := StepSpanID(t.SessionID, t.Number, st.Number)
		ssp := spans.AppendEmpty()
		ssp.SetTraceID(trace)
		ssp.SetSpanID(stepID)
		ssp.SetParentSpanID(root)
		ssp.SetName("step")
		ssp.SetKind(ptrace.SpanKindInternal)
		ssp.SetStartTimestamp(ts(st.StartTime))
		ssp.SetEndTimestamp(ts(st.EndTime))
		sa := ssp.Attributes()
		sa.EnsureCapacity(6)
		sa.PutStr(semconv.GenAIConversationID, clientid.Session(t.SessionID))
		sa.PutInt(semconv.DshTurn, t.Number)
		sa.PutInt(semconv.DshStep, st.Number)
		sa.PutInt(semconv.DshEventSeq, st.StartSeq)
		if st.Open {
			sa.PutBool(semconv.DshStepOpen, true)
		}
		if st.Clamped {
			sa.PutBool(semconv.DshTimeClamped, true)
		}
		appendEvents(ssp, st.Events, "")

		chatByCall := map[string]pcommon.SpanID{}
		for _, at := range st.Attempts {
			id := ChatSpanID(t.SessionID, t.Number, st.Number, at.Index)
			for _, c := range at.Advertised {
				chatByCall[c.ID] = id
			}
			appendChat(spans, t, st, at, trace, stepID, id)
		}
		for _, tc := range st.Tools {
			appendTool(spans, t, st, tc, trace, stepID, chatByCall[tc.CallID], "")
		}
	}
}

// putTurnUsage puts the turn's totals on its root under dsh.turn.* names
// (the conventions keep usage to the model calls): input tokens include
// the cached ones, as on chat spans. A turn none of whose calls reported
// usage has no usage attributes — unknown, not zero.
func putTurnUsage(a pcommon.Map, t *turnengine.Turn) {
	u := t.Usage
	if u.Reported {
		a.PutInt(semconv.DshTurnUsageInputTokens, u.Input+u.CacheRead+u.CacheWrite)
		a.PutInt(semconv.DshTurnUsageOutputTokens, u.Output)
		a.PutInt(semconv.DshTurnUsageCacheReadInputTokens, u.CacheRead)
		a.PutInt(semconv.DshTurnUsageCacheWriteInputTokens, u.CacheWrite)
		if u.Reasoning > 0 {
			a.PutInt(semconv.DshTurnUsageReasoningOutputTokens, u.Reasoning)
		}
	}
	if t.PricedCalls > 0 {
		a.PutDouble(semconv.DshTurnCost, t.Cost.Total())
	}
	if t.UnpricedCalls > 0 {
		a.PutInt(semconv.DshTurnCostUnpricedCalls, int64(t.UnpricedCalls))
	}
}

// putCallUsage puts a model call's usage as the conventions name it:
// input tokens include the cached ones, which are also given apart.
func putCallUsage(a pcommon.Map, u *sessionlog.Usage) {
	a.PutInt(semconv.GenAIUsageInputTokens, u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens)
	a.PutInt(semconv.GenAIUsageOutputTokens, u.OutputTokens)
	a.PutInt(semconv.GenAIUsageCacheReadInputTokens, u.CacheReadTokens)
	a.PutInt(semconv.GenAIUsageCacheWriteInputTokens, u.CacheWriteTokens)
	if u.ReasoningTokens > 0 {
		a.PutInt(semconv.GenAIUsageReasoningOutputTokens, u.ReasoningTokens)
	}
}

func appendChat(spans ptrace.SpanSlice, t *turnengine.Turn, st *turnengine.Step, at *turnengine.Attempt, trace pcommon.TraceID, parent, id pcommon.SpanID) {
	sp := spans.AppendEmpty()
	sp.SetTraceID(trace)
	sp.SetSpanID(id)
	sp.SetParentSpanID(parent)
	model := at.Model
	if model == "" {
		model = "unknown"
	}
	sp.SetName("chat " + model)
	sp.SetKind(ptrace.SpanKindClient)
	sp.SetStartTimestamp(ts(at.StartTime))
	sp.SetEndTimestamp(ts(at.EndTime))
	a := sp.Attributes()
	a.EnsureCapacity(22) // the attributes below, allocated once
	putChatIdentity(a, t, st, at)
	putChatResponse(a, at)
	putChatContent(a, st, at)
	if at.Failed() {
		setChatFailed(sp, a, at)
	}
}

// putChatIdentity puts what the model call is: the operation, the
// conversation, the provider and model, and where it stands in the turn.
func putChatIdentity(a pcommon.Map, t *turnengine.Turn, st *turnengine.Step, at *turnengine.Attempt) {
	a.PutStr(semconv.GenAIOperationName, "chat")
	a.PutStr(semconv.GenAIConversationID, clientid.Session(t.SessionID))
	if at.Provider != "" {
		name := ProviderName(at.Provider)
		a.PutStr(semconv.GenAIProviderName, name)
		if name != at.Provider {
			a.PutStr(semconv.DshProvider, at.Provider) // dsh's own id of the route
		}
	}
	if at.Model != "" {
		a.PutStr(semconv.GenAIRequestModel, at.Model)
		a.PutStr(semconv.GenAIResponseModel, at.Model)
	}
	a.PutInt(semconv.DshTurn, t.Number)
	a.PutInt(semconv.DshStep, st.Number)
	a.PutInt(semconv.DshAttempt, int64(at.Index))
}

// putChatResponse puts what the model call answered and cost: usage,
// cost, finish reason, the committing message and its sources, timing.
func putChatResponse(a pcommon.Map, at *turnengine.Attempt) {
	if at.Usage != nil {
		putCallUsage(a, at.Usage)
	}
	if at.Priced {
		a.PutDouble(semconv.DshUsageCost, at.Cost.Total())
	}
	if finish := finishReason(at); finish != "" {
		a.PutEmptySlice(semconv.GenAIResponseFinishReasons).AppendEmpty().SetStr(finish)
	}
	if at.FinishKind != "" {
		a.PutStr(semconv.DshFinishKind, at.FinishKind)
	}
	if at.Committed {
		a.PutInt(semconv.DshEventSeq, at.MessageSeq)
		if len(at.Sources) > 0 {
			s := a.PutEmptySlice(semconv.DshSourceEventSeqs)
			s.EnsureCapacity(len(at.Sources))
			for _, n := range at.Sources {
				s.AppendEmpty().SetInt(n)
			}
		}
	}
	if at.Interrupted {
		a.PutBool(semconv.DshInterrupted, true)
	}
	if at.HasFirstChunk {
		a.PutDouble(semconv.GenAIResponseTimeToFirstChunk, seconds(at.FirstChunkTime-at.StartTime))
	}
	if at.Clamped {
		a.PutBool(semconv.DshTimeClamped, true)
	}
}

// putChatContent puts the captured content (docs/design.md §4.4): the
// system instructions and messages the model saw, and its answer.
func putChatContent(a pcommon.Map, st *turnengine.Step, at *turnengine.Attempt) {
	sys := at.SystemInstructions
	if first := st.Attempts[0]; sys == "" && first != at && first.InputMessages == at.InputMessages {
		sys = first.SystemInstructions // a retry saw what the step's first attempt saw
	}
	if sys != "" {
		a.PutStr(semconv.GenAISystemInstructions, sys)
	}
	if at.InputMessages != "" {
		a.PutStr(semconv.GenAIInputMessages, at.InputMessages)
	}
	if at.OutputMessages != "" {
		a.PutStr(semconv.GenAIOutputMessages, at.OutputMessages)
	}
}

// setChatFailed marks a failed model call: error.type is its failure
// code (else _OTHER), the status message its failure's.
func setChatFailed(sp ptrace.Span, a pcommon.Map, at *turnengine.Attempt) {
	code, msg := "_OTHER", "model call failed ("+at.FinishKind+")"
	if at.Failure != nil {
		if at.Failure.Code != "" {
			code = at.Failure.Code
		}
		if at.Failure.Message != "" {
			msg = at.Failure.Message
		}
	}
	a.PutStr(semconv.ErrorType, code)
	sp.Status().SetCode(ptrace.StatusCodeError)
	sp.Status().SetMessage(msg)
}

func appendTool(spans ptrace.SpanSlice, t *turnengine.Turn, st *turnengine.Step, tc *turnengine.ToolCall, trace pcommon.TraceID, parent, chat pcommon.SpanID, parentCall string) {
	id := ToolSpanID(t.SessionID, t.Number, st.Number, tc.CallID, tc.SubCallID)
	sp := spans.AppendEmpty()
	sp.SetTraceID(trace)
	sp.SetSpanID(id)
	sp.SetParentSpanID(parent)
	name := tc.Name
	if name == "" {
		name = "unknown"
	}
	sp.SetName("execute_tool " + name)
	sp.SetKind(ptrace.SpanKindInternal)
	sp.SetStartTimestamp(ts(tc.StartTime))
	sp.SetEndTimestamp(ts(tc.EndTime))
	a := sp.Attributes()
	a.EnsureCapacity(14) // the attributes below, allocated once
	putToolAttrs(a, t, st, tc, parentCall)
	if tc.Outcome == "error" {
		code := toolErrorType(tc)
		a.PutStr(semconv.ErrorType, code)
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage(fmt.Sprintf("tool %s failed (%s)", name, code))
	}
	if !chat.IsEmpty() {
		l := sp.Links().AppendEmpty()
		l.SetTraceID(trace)
		l.SetSpanID(chat)
		l.Attributes().PutStr(semconv.DshLink, "advertised_by")
	}
	if tc.SubCallID == "" {
		appendEvents(sp, st.Events, tc.CallID)
	}
	for _, sub := range tc.SubCalls {
		appendTool(spans, t, st, sub, trace, id, pcommon.SpanID{}, tc.CallID)
	}
}

// putToolAttrs puts what the tool call is (its tool, its call id — a
// nested dispatch's own and its parent call's —, where it stands in the
// turn), its outcome and its captured content.
func putToolAttrs(a pcommon.Map, t *turnengine.Turn, st *turnengine.Step, tc *turnengine.ToolCall, parentCall string) {
	a.PutStr(semconv.GenAIOperationName, "execute_tool")
	a.PutStr(semconv.GenAIConversationID, clientid.Session(t.SessionID))
	if tc.Name != "" {
		a.PutStr(semconv.GenAIToolName, tc.Name)
	}
	a.PutStr(semconv.GenAIToolType, "function")
	if tc.SubCallID != "" {
		a.PutStr(semconv.GenAIToolCallID, tc.SubCallID)
		a.PutStr(semconv.DshToolParentCallID, parentCall)
	} else {
		a.PutStr(semconv.GenAIToolCallID, tc.CallID)
	}
	a.PutInt(semconv.DshTurn, t.Number)
	a.PutInt(semconv.DshStep, st.Number)
	a.PutInt(semconv.DshEventSeq, tc.StartSeq)
	a.PutStr(semconv.DshToolOutcome, tc.Outcome)
	if tc.Clamped {
		a.PutBool(semconv.DshTimeClamped, true)
	}
	if tc.Arguments != "" {
		a.PutStr(semconv.GenAIToolCallArguments, tc.Arguments)
	}
	if tc.Result != "" {
		a.PutStr(semconv.GenAIToolCallResult, tc.Result)
	}
}

// appendEvents adds the span events that belong on this span: those with
// no call when callID is empty, else those of the call.
func appendEvents(sp ptrace.Span, events []turnengine.SpanEvent, callID string) {
	for _, e := range events {
		if e.CallID != callID {
			continue
		}
		se := sp.Events().AppendEmpty()
		se.SetName(e.Name)
		se.SetTimestamp(ts(e.Time))
		se.Attributes().PutInt(semconv.DshEventSeq, e.Seq)
		putAttrs(se.Attributes(), e.Attrs)
	}
}

func putAttrs(m pcommon.Map, attrs []turnengine.Attr) {
	for _, a := range attrs {
		switch v := a.Value.(type) {
		case string:
			if v != "" { // an empty value is no attribute (error.type on success)
				m.PutStr(a.Key, v)
			}
		case int64:
			m.PutInt(a.Key, v)
		case bool:
			m.PutBool(a.Key, v)
		}
	}
}
