// Package pricing prices model calls: a table of per-million-token prices
// by provider and model, optionally by date range, and the cost of a call's
// usage under it. A model the table does not price has no cost — never a
// guess.
package pricing

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Price is what a model charges, in USD per million tokens, by token type.
// The types are disjoint: Input is prompt tokens neither read from nor
// written to a provider cache.
type Price struct {
	Input, CacheRead, CacheWrite, Output float64
}

// Entry prices one provider's model over [From, Until): a zero From is
// open towards the past, a zero Until towards the future.
type Entry struct {
	Provider, Model string
	From, Until     time.Time
	Price
}

// Usage is a model call's token counts, disjoint as Price's types are:
// Input excludes the cached tokens. Reasoning tokens are a part of Output
// and priced as output.
type Usage struct {
	Input, CacheRead, CacheWrite, Output int64
}

// Cost is a call's cost in USD, by token type.
type Cost struct {
	Input, CacheRead, CacheWrite, Output float64
}

// Total is the sum over the token types.
func (c Cost) Total() float64 { return round(c.Input + c.CacheRead + c.CacheWrite + c.Output) }

// Add returns c + d.
func (c Cost) Add(d Cost) Cost {
	return Cost{round(c.Input + d.Input), round(c.CacheRead + d.CacheRead), round(c.CacheWrite + d.CacheWrite), round(c.Output + d.Output)}
}

// round keeps costs to a pico-dollar, far below any price, so that sums
// print as the decimal figures they are rather than as binary noise.
func round(usd float64) float64 { return math.Round(usd*1e12) / 1e12 }

// Of is the cost of u at price p.
func (p Price) Of(u Usage) Cost {
	per := func(n int64, usdPerMillion float64) float64 { return round(float64(n) * usdPerMillion / 1e6) }
	return Cost{
		Input:      per(u.Input, p.Input),
		CacheRead:  per(u.CacheRead, p.CacheRead),
		CacheWrite: per(u.CacheWrite, p.CacheWrite),
		Output:     per(u.Output, p.Output),
	}
}

type key struct{ provider, model string }

// Table is a validated price table. The zero value and nil price nothing.
type Table struct {
	byModel map[key][]Entry // sorted by From
}

// New validates entries and builds a table: provider and model are
// required, prices must be finite and not negative, Until must be after
// From, and the ranges of one provider's model must not overlap.
func New(entries []Entry) (*Table, error) {
	t := &Table{byModel: map[key][]Entry{}}
	var errs []error
	for i, e := range entries {
		where := fmt.Sprintf("price %d (%s/%s)", i, e.Provider, e.Model)
		if strings.TrimSpace(e.Provider) == "" || strings.TrimSpace(e.Model) == "" {
			errs = append(errs, fmt.Errorf("%s: provider and model are required", where))
			continue
		}
		for _, f := range [...]struct {
			name string
			v    float64
		}{{"input", e.Input}, {"cache_read", e.CacheRead}, {"cache_write", e.CacheWrite}, {"output", e.Output}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				errs = append(errs, fmt.Errorf("%s: %s price must be a finite number ≥ 0, got %v", where, f.name, f.v))
			}
		}
		if !e.From.IsZero() && !e.Until.IsZero() && !e.Until.After(e.From) {
			errs = append(errs, fmt.Errorf("%s: until (%s) must be after from (%s)", where, e.Until.Format(time.RFC3339), e.From.Format(time.RFC3339)))
			continue
		}
		k := key{e.Provider, e.Model}
		t.byModel[k] = append(t.byModel[k], e)
	}
	for k, es := range t.byModel {
		sort.SliceStable(es, func(i, j int) bool { return before(es[i].From, es[j].From) })
		for i := 1; i < len(es); i++ {
			prev, cur := es[i-1], es[i]
			if prev.Until.IsZero() || cur.From.IsZero() || prev.Until.After(cur.From) {
				errs = append(errs, fmt.Errorf("prices of %s/%s overlap: %s and %s", k.provider, k.model, span(prev), span(cur)))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// before orders From times, a zero (open) From first.
func before(a, b time.Time) bool {
	if a.IsZero() {
		return !b.IsZero()
	}
	return !b.IsZero() && a.Before(b)
}

func span(e Entry) string {
	from, until := "…", "…"
	if !e.From.IsZero() {
		from = e.From.Format(time.RFC3339)
	}
	if !e.Until.IsZero() {
		until = e.Until.Format(time.RFC3339)
	}
	return "[" + from + ", " + until + ")"
}

// Lookup returns the price of provider's model at time at, and whether the
// table has one.
func (t *Table) Lookup(provider, model string, at time.Time) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	for _, e := range t.byModel[key{provider, model}] {
		if (e.From.IsZero() || !at.Before(e.From)) && (e.Until.IsZero() || at.Before(e.Until)) {
			return e.Price, true
		}
	}
	return Price{}, false
}

// Len is the number of entries.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	n := 0
	for _, es := range t.byModel {
		n += len(es)
	}
	return n
}
