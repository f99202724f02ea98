package replay

import (
	"bufio"
	"html/template"
	"io"
	"slices"
	"strings"

	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// List is the page that lists the sessions a server serves.
type List struct {
	// Roots are the session roots served.
	Roots []string
	// Query, Agent and Reason are the filters applied (a session id
	// substring, an agent, a turn end reason).
	Query, Agent, Reason string
	// Agents and Reasons are the values the filters offer.
	Agents, Reasons []string
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
		Activity: s.Last, HasActivity: s.HasTimes, Tokens: s.Totals.Tokens, Cost: s.Totals.Cost, Priced: s.Totals.PricedCalls > 0}
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
	}
	return true
}
