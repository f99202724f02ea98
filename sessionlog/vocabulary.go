package sessionlog

// knownTypes are the event types some dsh version defines (docs/format.md §6.2). The
// validator holds them to the log-only rules; every other type is plugin-
// owned and passes untouched.
var knownTypes = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range []string{
		// v4's 60 types.
		"agent-preset/selected", "agent/inbox/spliced", "approval/asked", "approval/decided", "approval/policy",
		"assistant/attempt", "assistant/message", "command/done", "command/run", "compaction/end",
		"compaction/prune", "compaction/start", "compaction/summary", "deliverables/presented",
		"developer/message", "feedback/message-delete", "feedback/message-put", "feedback/record",
		"goal/change", "hook/invoked", "hook/result", "image/offload", "llm/retry", "llm/retry-started",
		"model/selection", "permission/preset", "plan/mode", "request/context", "request/header",
		"sandbox/mode", "schedule/change", "session-log-deepseek/delivery-accepted", "session/end-seed",
		"session/title", "session/title-llm-request", "step/end", "step/start", "subagent/catalog",
		"subagent/descriptor", "subagent/model-selection-policy", "system/message", "team/member",
		"team/message/delivered", "team/message/queued", "team/task", "todo/write", "tool-workflow/agent-end",
		"tool-workflow/agent-start", "tool-workflow/run-end", "tool-workflow/run-start", "tool/call",
		"tool/ptc-dispatch", "tool/ptc-dispatch-start", "tool/result", "turn/end", "turn/start", "user/message",
		"web/deepseek-search-llm-request", "working-directory/change", "workspace/changes",
		// v0–v2 only.
		"assistant/chunk", "tool/code-dispatch", "tool/code-dispatch-start",
	} {
		m[t] = true
	}
	return m
}()

// IsKnownType reports whether some dsh version defines the event type.
func IsKnownType(typ string) bool { return knownTypes[typ] }

// hasDetail reports whether events of type typ carry a Detail: exactly the
// types whose fields decodeDetail reads (the others share noDetail, so a
// row of theirs is allocated without one).
func hasDetail(typ string) bool {
	switch typ {
	case "turn/end", "tool/call", "tool/result", "user/message", "system/message",
		"developer/message", "assistant/message", "request/header", "request/context",
		"tool/ptc-dispatch-start", "tool/ptc-dispatch", "tool/code-dispatch-start", "tool/code-dispatch",
		"llm/retry", "llm/retry-started", "session/end-seed", "approval/asked":
		return true
	}
	return false
}

// IsSurfaceType reports whether events of type typ are surface events in
// format version v (docs/format.md §6.1).
func IsSurfaceType(typ string, v int) bool {
	switch typ {
	case "user/message", "assistant/message", "tool/result":
		return true
	case "system/message":
		return v >= 3
	case "developer/message":
		return v >= 4
	}
	return false
}
