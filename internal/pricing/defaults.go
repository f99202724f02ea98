package pricing

import "time"

// Built-in prices of DeepSeek's official API models, in USD per million
// tokens, from DeepSeek's "Models & Pricing" page
// (api-docs.deepseek.com/quick_start/pricing), read on 2026-12-01 in its
// version of 2026-05-22 (the latest copy that could be read):
//
//   - deepseek-v4-flash: input cache hit $0.0028, cache miss $0.14,
//     output $0.28;
//   - deepseek-v4-pro: cache hit $0.003625, cache miss $0.435, output
//     $0.87 (a quarter of its launch price, made its standing price after
//     2026-05-31);
//   - every model's cache-hit price is a tenth of its launch price from
//     2026-04-26 12:15 UTC (flash $0.028, pro $0.03625 before);
//   - deepseek-chat and deepseek-reasoner are kept for compatibility as
//     deepseek-v4-flash's non-thinking and thinking modes: priced here as
//     flash from that page's date of the cache-hit cut on, and not before
//     (their earlier prices belonged to other models).
//
// DeepSeek has no separate cache-write price: tokens not read from the
// cache are billed as cache misses, so cache writes cost the input price.
// dsh names the provider "deepseek-official"; "deepseek" is the GenAI
// conventions' name for it.

// cacheHitCut is when DeepSeek cut cache-hit prices to a tenth.
var cacheHitCut = time.Date(2026, 4, 26, 12, 15, 0, 0, time.UTC)

func deepseekEntries(provider string) []Entry {
	flashBefore := Price{Input: 0.14, CacheRead: 0.028, CacheWrite: 0.14, Output: 0.28}
	flash := Price{Input: 0.14, CacheRead: 0.0028, CacheWrite: 0.14, Output: 0.28}
	proBefore := Price{Input: 0.435, CacheRead: 0.03625, CacheWrite: 0.435, Output: 0.87}
	pro := Price{Input: 0.435, CacheRead: 0.003625, CacheWrite: 0.435, Output: 0.87}
	return []Entry{
		{Provider: provider, Model: "deepseek-v4-flash", Until: cacheHitCut, Price: flashBefore},
		{Provider: provider, Model: "deepseek-v4-flash", From: cacheHitCut, Price: flash},
		{Provider: provider, Model: "deepseek-v4-pro", Until: cacheHitCut, Price: proBefore},
		{Provider: provider, Model: "deepseek-v4-pro", From: cacheHitCut, Price: pro},
		{Provider: provider, Model: "deepseek-chat", From: cacheHitCut, Price: flash},
		{Provider: provider, Model: "deepseek-reasoner", From: cacheHitCut, Price: flash},
	}
}

// DefaultEntries are the built-in prices (see above).
func DefaultEntries() []Entry {
	return append(deepseekEntries("deepseek-official"), deepseekEntries("deepseek")...)
}

// Default is the table of the built-in prices.
func Default() *Table {
	t, err := New(DefaultEntries())
	if err != nil {
		panic("pricing: built-in table invalid: " + err.Error()) // a programming error, caught by the tests
	}
	return t
}
