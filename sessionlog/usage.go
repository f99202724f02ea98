package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"

func (d *RowDecoder) decodeUsage(u jsontape.Value) *Usage {
	if !u.Exists() || u.Type() != jsontape.Object {
		return nil
	}
	var out *Usage
	if d.arena != nil {
		out = d.arena.usages.one()
	} else {
		out = new(Usage)
	}
	// One walk over the members, not one lookup per count.
	var m [6]jsontape.Value
	u.Gather(usageMember, m[:])
	for x, dst := range [...]*int64{&out.InputTokens, &out.OutputTokens, &out.TotalTokens,
		&out.CacheReadTokens, &out.CacheWriteTokens, &out.ReasoningTokens} {
		*dst, _ = m[x].SafeInt()
	}
	return out
}

// usageMember is the index of a TokenUsage count in decodeUsage's order.
func usageMember(key string) int {
	switch key {
	case "inputTokens":
		return 0
	case "outputTokens":
		return 1
	case "totalTokens":
		return 2
	case "cacheReadTokens":
		return 3
	case "cacheWriteTokens":
		return 4
	case "reasoningTokens":
		return 5
	}
	return -1
}
