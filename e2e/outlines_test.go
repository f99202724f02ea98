//go:build e2e

package e2e

// outlines are span trees of turns as Jaeger must show them, one per kind of
// turn, checked by hand against the corpus logs: span names, ERROR status,
// end reasons, abort causes, error types, steps, call ids and tool outcomes
// (outline renders them; children in start order).
var outlines = []struct {
	session string
	turn    int64
	tree    string
}{
	// Provider failure (AUTH): the turn and its model call fail.
	{"e2e-v0-error-finish", 1, `invoke_agent dsh ERROR dsh.turn.end_reason=error error.type=AUTH
  step dsh.step=1
    chat deepseek-v4-flash ERROR error.type=AUTH dsh.step=1
`},
	{"e2e-v4-error-finish", 1, `invoke_agent dsh ERROR dsh.turn.end_reason=error error.type=AUTH
  step dsh.step=1
    chat deepseek-v4-flash ERROR error.type=AUTH dsh.step=1
`},
	// Cancelled by the user: aborted is not an error.
	{"e2e-v0-cancel", 1, `invoke_agent dsh dsh.turn.end_reason=aborted dsh.turn.abort_cause=user
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
`},
	// Two tool calls of one step, paired with their results by callId.
	{"e2e-v0-parallel-tool-calls", 1, `invoke_agent dsh dsh.turn.end_reason=completed
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
    execute_tool read dsh.step=1 gen_ai.tool.call.id=call_read_a dsh.tool.outcome=ok
    execute_tool read dsh.step=1 gen_ai.tool.call.id=call_read_b dsh.tool.outcome=ok
  step dsh.step=2
    chat deepseek-v4-flash dsh.step=2
`},
	// Crash repair: a synthetic TOOL_OUTCOME_UNKNOWN error result, the turn
	// closed as interrupted.
	{"e2e-v0-tool-outcome-unknown", 1, `invoke_agent dsh ERROR dsh.turn.end_reason=interrupted
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
    execute_tool write_remote ERROR error.type=TOOL_OUTCOME_UNKNOWN dsh.step=1 gen_ai.tool.call.id=unknown-outcome-call dsh.tool.outcome=error
`},
	// Context window exceeded, compaction, second attempt in the same step.
	{"e2e-v0-compaction-recovery", 1, `invoke_agent dsh dsh.turn.end_reason=completed
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
    execute_tool bash dsh.step=1 gen_ai.tool.call.id=call_compaction_marker dsh.tool.outcome=ok
  step dsh.step=2
    chat deepseek-v4-flash ERROR error.type=CONTEXT_WINDOW_EXCEEDED dsh.step=2
    chat deepseek-v4-flash dsh.step=2
`},
	// v4: denied tool calls, one nested in a code-mode dispatch.
	{"e2e-v4-tool-error-details", 1, `invoke_agent dsh dsh.turn.end_reason=completed
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
    execute_tool bash ERROR error.type=AUTO_REVIEW_DENIED dsh.step=1 gen_ai.tool.call.id=denied-native dsh.tool.outcome=error
  step dsh.step=2
    chat deepseek-v4-flash dsh.step=2
    execute_tool run_code dsh.step=2 gen_ai.tool.call.id=denied-code dsh.tool.outcome=ok
      execute_tool bash ERROR error.type=AUTO_REVIEW_DENIED dsh.step=2 gen_ai.tool.call.id=denied-code:ptc:1 dsh.tool.outcome=error
  step dsh.step=3
    chat deepseek-v4-flash dsh.step=3
`},
	// v4 over zstd: a max-tokens stop wins over completed.
	{"e2e-v4-max-tokens-continue", 1, `invoke_agent dsh dsh.turn.end_reason=max-tokens
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
`},
	// The headless stream-json wrapper: a rate-limited attempt, retried.
	{"e2e-wire-v0-provider-retry", 1, `invoke_agent dsh dsh.turn.end_reason=completed
  step dsh.step=1
    chat deepseek-v4-flash ERROR error.type=RATE_LIMIT dsh.step=1
    chat deepseek-v4-flash dsh.step=1
`},
	// Tailed: a turn that never ends is closed as dangling after the
	// collector's dangling_timeout.
	{"12121212-3434-4545-8686-787878787878", 1, `invoke_agent dsh ERROR dsh.turn.end_reason=dangling
`},
	// Tailed: three steps, read then edit.
	{"736c4bd8-41bd-43fb-9030-b4df3b2a4f83", 1, `invoke_agent dsh dsh.turn.end_reason=completed
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
    execute_tool read dsh.step=1 gen_ai.tool.call.id=call_00_S6krdIDHoSCGWv7WnXX97617 dsh.tool.outcome=ok
  step dsh.step=2
    chat deepseek-v4-flash dsh.step=2
    execute_tool edit dsh.step=2 gen_ai.tool.call.id=call_00_vOytneZ0XpsLslEEJAxR6398 dsh.tool.outcome=ok
  step dsh.step=3
    chat deepseek-v4-flash dsh.step=3
`},
	// Tailed while being written, torn in the middle of a line.
	{"f3cbd087-fb45-4b32-b0f2-3082d65bfcb4", 1, `invoke_agent dsh dsh.turn.end_reason=completed
  step dsh.step=1
    chat deepseek-v4-flash dsh.step=1
    execute_tool bash dsh.step=1 gen_ai.tool.call.id=call_00_d0sAHpJ9mYOJi0z7KNy30441 dsh.tool.outcome=ok
  step dsh.step=2
    chat deepseek-v4-flash dsh.step=2
`},
}
