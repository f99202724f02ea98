package replay

import (
	"slices"
	"strings"
)

// Child is a session another one started (a subagent), as the session
// root knows it: its id and when it was created (its header's createdAt,
// Unix ms).
type Child struct {
	ID      string
	Created int64
}

// children places the subagent sessions a server knows of on a session's
// page: each at the tool call in flight when it was created — of a tool
// whose name says agent when there is one, the earliest such call not yet
// given a child — else only in the session's header.
func children(s *Session, kids []Child) (atCall map[string]Link, all []Link) {
	if len(kids) == 0 {
		return nil, nil
	}
	kids = slices.Clone(kids)
	slices.SortStableFunc(kids, func(a, b Child) int {
		switch {
		case a.Created < b.Created:
			return -1
		case a.Created > b.Created:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	var calls []*Call
	for _, t := range s.Turns {
		for _, st := range t.Steps {
			for _, c := range st.Calls {
				if c.Child == nil && c.CallSeq >= 0 {
					calls = append(calls, c)
				}
			}
		}
	}
	atCall = map[string]Link{}
	for _, k := range kids {
		var best *Call
		for _, c := range calls {
			end := c.LoggedEndTime
			if c.Outcome == "unknown" {
				end = s.Last
			}
			if _, taken := atCall[c.Anchor]; taken || k.Created < c.LoggedStartTime || k.Created > end {
				continue
			}
			if best == nil || agentish(c) && !agentish(best) {
				best = c
			}
		}
		l := Link{Session: k.ID}
		if best != nil {
			l.Call = best.Anchor
			atCall[best.Anchor] = l
		}
		all = append(all, l)
	}
	return atCall, all
}

// agentish reports whether a call's tool reads like one that starts an agent.
func agentish(c *Call) bool { return strings.Contains(strings.ToLower(c.Name), "agent") }
