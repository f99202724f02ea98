package replay

import (
	"bufio"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// List is the page that lists the sessions a server serves.
type List struct {
	// Roots are the session roots served.
	Roots []string
	// Query, Agent, Reason and Finding are the filters applied (a session
	// id substring, an agent, a turn end reason, a finding's name).
	Query, Agent, Reason, Finding string
	// Agents, Reasons and Findings are the values the filters offer.
	Agents, Reasons, Findings []string
	// Total is the number of sessions before filtering.
	Total    int
	Sessions []ListEntry
}

// ListEntry is one session of the list.
type ListEntry struct {
	ID, URL string
	// Client is the client that wrote the session (an archive's
	// @clients root), "" for none.
	Client string
	// Where names the root and project directory the session is in.
	Where string
	// Err says why the session could not be read; the rest is then empty.
	Err   string
	Agent string
	Turns int
	// Reasons are its turns' end reasons, most frequent first; Last the
	// last turn's.
	Reasons []ReasonCount
	Last    string
	// Findings are its turns' findings by name, in the order the rules
	// are reported (findings.Names).
	Findings []FindingCount
	// Activity is the latest event time (Unix ms), HasActivity false
	// for a session without events.
	Activity    int64
	HasActivity bool
	Tokens      turnengine.Tokens
	Cost        pricing.Cost
	Priced      bool
	Size        int64
}

// Summary fills a list entry from a session's page.
func Summary(s *Session) ListEntry {
	return ListEntry{ID: s.ID, Agent: s.Agent, Turns: s.Totals.Turns, Reasons: reasons(s.Totals), Last: s.Totals.LastReason,
		Activity: s.Last, HasActivity: s.HasTimes, Tokens: s.Totals.Tokens, Cost: s.Totals.Cost, Priced: s.Totals.PricedCalls > 0,
		Findings: findingCounts(s.Totals)}
}

// FindingCount is a finding's name and how many turns have it.
type FindingCount struct {
	Name  string
	Count int
}

// findingCounts lists a session's findings in the rules' order.
func findingCounts(t Totals) []FindingCount {
	var out []FindingCount
	for _, name := range findings.Names {
		if n := t.Findings[name]; n > 0 {
			out = append(out, FindingCount{name, n})
		}
	}
	return out
}

// HasFinding reports whether some turn of the session has the finding name.
func (e ListEntry) HasFinding(name string) bool {
	return slices.ContainsFunc(e.Findings, func(f FindingCount) bool { return f.Name == name })
}

// HasReason reports whether some turn of the session ended with reason.
func (e ListEntry) HasReason(reason string) bool {
	return slices.ContainsFunc(e.Reasons, func(r ReasonCount) bool { return r.Kind == reason })
}

// listView is what the list template reads.
type listView struct {
	List
	CSS template.CSS
	CSP string
}

// RenderList writes the list page.
func RenderList(w io.Writer, l List) error {
	t, err := base.Clone()
	if err != nil {
		return err
	}
	t.Funcs(funcs(&renderer{p: &Page{}}))
	bw := bufio.NewWriter(w)
	if err := t.ExecuteTemplate(bw, "list", listView{List: l, CSS: template.CSS(css), CSP: csp}); err != nil {
		return err
	}
	return bw.Flush()
}

// Policy is the Content-Security-Policy of every page: a server sends it
// as a header too (there it can forbid framing as well).
func Policy() string { return csp + "; frame-ancestors 'none'" }

// Matches reports whether the entry passes the list's filters.
func (l List) Matches(e ListEntry) bool {
	switch {
	case l.Query != "" && !strings.Contains(strings.ToLower(e.ID), strings.ToLower(l.Query)):
		return false
	case l.Agent != "" && e.Agent != l.Agent:
		return false
	case l.Reason != "" && !e.HasReason(l.Reason):
		return false
	case l.Finding != "" && !e.HasFinding(l.Finding):
		return false
	}
	return true
}
