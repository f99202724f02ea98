package turnengine

import (
	"time"

	"github.com/dshtrace/dshtrace/internal/pricing"
)

// defaultPrices are the built-in prices, shared by every engine.
var defaultPrices = pricing.Default()

// price sets the cost of every model call of steps (of turn t) that
// reported usage and whose provider and model the engine's prices know, at
// the turn's start time, and adds them to the turn's total. It runs before
// the observer is told of a turn or fragment, so that the spans rendered
// from it carry the cost the metrics count.
func (e *Engine) price(t *Turn, steps ...*Step) {
	at := time.UnixMilli(t.StartTime).UTC()
	for _, st := range steps {
		for _, a := range st.Attempts {
			a.Cost, a.Priced = pricing.Cost{}, false
			if a.Usage == nil {
				continue
			}
			p, ok := e.cfg.Prices.Lookup(a.Provider, a.Model, at)
			if !ok {
				t.UnpricedCalls++
				continue
			}
			a.Cost = p.Of(pricing.Usage{Input: a.Usage.InputTokens, CacheRead: a.Usage.CacheReadTokens,
				CacheWrite: a.Usage.CacheWriteTokens, Output: a.Usage.OutputTokens})
			a.Priced = true
			t.Cost = t.Cost.Add(a.Cost)
			t.PricedCalls++
		}
	}
}
