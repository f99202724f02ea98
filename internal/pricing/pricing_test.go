package pricing

import (
	"math"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestCostByHand(t *testing.T) {
	// 1,000 uncached + 9,000 cache-read input tokens and 500 output
	// tokens of deepseek-v4-flash after the cache-hit cut:
	// 1000×0.14/1e6 + 9000×0.0028/1e6 + 500×0.28/1e6
	// = 0.00014 + 0.0000252 + 0.00014 = 0.0003052 USD.
	p, ok := Default().Lookup("deepseek-official", "deepseek-v4-flash", time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if !ok {
		t.Fatal("no price for deepseek-v4-flash")
	}
	c := p.Of(Usage{Input: 1000, CacheRead: 9000, Output: 500})
	if !near(c.Input, 0.00014) || !near(c.CacheRead, 0.0000252) || !near(c.Output, 0.00014) || c.CacheWrite != 0 {
		t.Fatalf("cost = %+v", c)
	}
	if !near(c.Total(), 0.0003052) {
		t.Fatalf("total = %v, want 0.0003052", c.Total())
	}
}

func TestLookupByDate(t *testing.T) {
	tb := Default()
	before := time.Date(2026, 4, 26, 12, 14, 59, 0, time.UTC)
	after := time.Date(2026, 4, 26, 12, 15, 0, 0, time.UTC)
	p, _ := tb.Lookup("deepseek-official", "deepseek-v4-pro", before)
	q, _ := tb.Lookup("deepseek-official", "deepseek-v4-pro", after)
	if p.CacheRead != 0.03625 || q.CacheRead != 0.003625 {
		t.Fatalf("pro cache read before/after the cut = %v/%v, want 0.03625/0.003625", p.CacheRead, q.CacheRead)
	}
	if _, ok := tb.Lookup("deepseek-official", "deepseek-chat", before); ok {
		t.Fatal("deepseek-chat priced before it became a flash alias")
	}
	if _, ok := tb.Lookup("deepseek-official", "deepseek-chat", after); !ok {
		t.Fatal("deepseek-chat not priced after the cut")
	}
}

func TestUnknownModelHasNoPrice(t *testing.T) {
	tb := Default()
	for _, k := range [][2]string{{"deepseek-official", "smoke-model"}, {"acme-llm", "deepseek-v4-flash"}, {"", ""}} {
		if _, ok := tb.Lookup(k[0], k[1], time.Now()); ok {
			t.Errorf("%s/%s priced, want no price", k[0], k[1])
		}
	}
	var nilTable *Table
	if _, ok := nilTable.Lookup("deepseek", "deepseek-v4-flash", time.Now()); ok {
		t.Error("a nil table priced something")
	}
}

func TestValidation(t *testing.T) {
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	mar := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"negative", []Entry{{Provider: "p", Model: "m", Price: Price{Output: -1}}}, "output price"},
		{"nan", []Entry{{Provider: "p", Model: "m", Price: Price{Input: math.NaN()}}}, "input price"},
		{"no model", []Entry{{Provider: "p"}}, "provider and model are required"},
		{"empty range", []Entry{{Provider: "p", Model: "m", From: feb, Until: jan}}, "must be after"},
		{"overlap", []Entry{{Provider: "p", Model: "m", From: jan, Until: mar}, {Provider: "p", Model: "m", From: feb}}, "overlap"},
		{"two open", []Entry{{Provider: "p", Model: "m"}, {Provider: "p", Model: "m", From: feb}}, "overlap"},
	} {
		if _, err := New(tc.entries); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// Adjacent ranges do not overlap.
	tb, err := New([]Entry{{Provider: "p", Model: "m", Until: feb, Price: Price{Input: 1}}, {Provider: "p", Model: "m", From: feb, Price: Price{Input: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tb.Lookup("p", "m", jan); p.Input != 1 {
		t.Errorf("jan price %v, want 1", p.Input)
	}
	if p, _ := tb.Lookup("p", "m", feb); p.Input != 2 {
		t.Errorf("feb price %v, want 2", p.Input)
	}
}

func TestDefaultIsValid(t *testing.T) {
	if Default().Len() != len(DefaultEntries()) {
		t.Fatal("built-in entries lost")
	}
}
