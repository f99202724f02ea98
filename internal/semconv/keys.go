package semconv

// The GenAI semantic conventions' keys.
const (
	GenAIAgentName                  = "gen_ai.agent.name"
	GenAIConversationID             = "gen_ai.conversation.id"
	GenAIInputMessages              = "gen_ai.input.messages"
	GenAIInvocationIsNested         = "gen_ai.invocation.is_nested"
	GenAIOperationName              = "gen_ai.operation.name"
	GenAIOutputMessages             = "gen_ai.output.messages"
	GenAIProviderName               = "gen_ai.provider.name"
	GenAIRequestModel               = "gen_ai.request.model"
	GenAIResponseFinishReasons      = "gen_ai.response.finish_reasons"
	GenAIResponseModel              = "gen_ai.response.model"
	GenAIResponseTimeToFirstChunk   = "gen_ai.response.time_to_first_chunk"
	GenAISystemInstructions         = "gen_ai.system_instructions"
	GenAITokenType                  = "gen_ai.token.type"
	GenAIToolCallArguments          = "gen_ai.tool.call.arguments"
	GenAIToolCallID                 = "gen_ai.tool.call.id"
	GenAIToolCallResult             = "gen_ai.tool.call.result"
	GenAIToolName                   = "gen_ai.tool.name"
	GenAIToolType                   = "gen_ai.tool.type"
	GenAIUsageCacheReadInputTokens  = "gen_ai.usage.cache_read.input_tokens"
	GenAIUsageCacheWriteInputTokens = "gen_ai.usage.cache_write.input_tokens"
	GenAIUsageInputTokens           = "gen_ai.usage.input_tokens"
	GenAIUsageOutputTokens          = "gen_ai.usage.output_tokens"
	GenAIUsageReasoningOutputTokens = "gen_ai.usage.reasoning.output_tokens"
)

// OpenTelemetry's general keys: the session, the event a log record
// carries, the error type.
const (
	SessionID = "session.id"
	// EnduserID is the client that wrote a session, as its listener's
	// authenticator named it (docs/operating.md, "Sharing a collector").
	EnduserID  = "enduser.id"
	EventType  = "event.type"
	EventSeq   = "event.seq"
	ErrorType  = "error.type"
	SessionCwd = "session.cwd"
	// SessionParentID and SessionSeedLength are a fork's parent session and
	// inherited prefix, on dsh v0's export records.
	SessionParentID   = "session.parent_id"
	SessionSeedLength = "session.seed_length"
)

// dsh's own keys: where an event or span belongs.
const (
	// DshTurn is the turn (on every span of its trace and every record
	// placed in it); DshStep the step; DshAttempt a chat span's model call.
	DshTurn    = "dsh.turn"
	DshStep    = "dsh.step"
	DshAttempt = "dsh.attempt"
	// DshToolParentCallID is, on a nested dispatch's span and records, the
	// tool call the dispatch runs under (its own id is GenAIToolCallID).
	DshToolParentCallID = "dsh.tool.parent_call_id"
	// DshEventSeq is the seq of the event that started a span.
	DshEventSeq = "dsh.event.seq"
	// DshEventCount is, on a packed row's record, the events it stands for.
	DshEventCount = "dsh.event.count"
	// DshSessionFormatVersion is the session log's format version.
	DshSessionFormatVersion = "dsh.session.format_version"
)

// dsh's own keys: what a span says of its turn, step, model call or tool
// call.
const (
	DshTurnEndReason                  = "dsh.turn.end_reason"
	DshTurnAbortCause                 = "dsh.turn.abort_cause"
	DshTurnAbortHookReason            = "dsh.turn.abort_hook_reason"
	DshTurnSteps                      = "dsh.turn.steps"
	DshTurnUsageInputTokens           = "dsh.turn.usage.input_tokens"
	DshTurnUsageOutputTokens          = "dsh.turn.usage.output_tokens"
	DshTurnUsageCacheReadInputTokens  = "dsh.turn.usage.cache_read.input_tokens"
	DshTurnUsageCacheWriteInputTokens = "dsh.turn.usage.cache_write.input_tokens"
	DshTurnUsageReasoningOutputTokens = "dsh.turn.usage.reasoning.output_tokens"
	DshTurnCost                       = "dsh.turn.cost"
	DshTurnCostUnpricedCalls          = "dsh.turn.cost.unpriced_calls"
	DshTurnClosedLate                 = "dsh.turn.closed_late"
	DshTurnClosedLateAfter            = "dsh.turn.closed_late_after"
	DshDanglingCause                  = "dsh.dangling.cause"
	DshStepOpen                       = "dsh.step.open"
	DshTimeClamped                    = "dsh.time.clamped"
	DshLink                           = "dsh.link"
	DshProvider                       = "dsh.provider"
	DshUsageCost                      = "dsh.usage.cost"
	DshFinishKind                     = "dsh.finish_kind"
	DshSourceEventSeqs                = "dsh.source_event_seqs"
	DshInterrupted                    = "dsh.interrupted"
	DshToolOutcome                    = "dsh.tool.outcome"
	DshToolCallsOutcomeUnknown        = "dsh.tool.calls_outcome_unknown"
	DshRetry                          = "dsh.retry"
	DshMessageSource                  = "dsh.message.source"
	DshViolation                      = "dsh.violation"
)

// The findings' keys (internal/findings): the GenAI conventions' evaluation
// event, which a turn's root span carries once per finding, and dsh's own.
const (
	// GenAIEvaluationResult is the span event of one finding.
	GenAIEvaluationResult      = "gen_ai.evaluation.result"
	GenAIEvaluationName        = "gen_ai.evaluation.name"
	GenAIEvaluationExplanation = "gen_ai.evaluation.explanation"
	// DshFindingPrefix prefixes the root span's boolean attribute per
	// finding (dsh.finding.tool_loop = true), so that a trace backend's
	// tag search finds every turn with it; DshFinding is the dsh.turn.findings
	// counter's attribute.
	DshFindingPrefix  = "dsh.finding."
	DshFinding        = "dsh.finding"
	DshFindingSeqs    = "dsh.finding.seqs"
	DshFindingCallIDs = "dsh.finding.call_ids"
)
