package sampling

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// The threshold is (1-p)·2^56, written as the spec writes th: 14 hex
// digits without their trailing zeros.
func TestThreshold(t *testing.T) {
	for _, c := range []struct {
		p  float64
		th string
	}{
		{1, "0"}, {0.5, "8"}, {0.25, "c"}, {0.75, "4"}, {1.0 / 16, "f"}, {0.1, "e666666666666"}, {0.01, "fd70a3d70a3d7"},
	} {
		s := New(Config{SessionRatio: c.p, MaxHeldSpans: 1})
		// Exact for powers of two; otherwise to the precision of p itself,
		// a float64 (the last digit may differ).
		assert.True(t, s.th == c.th || len(s.th) == 14 && s.th[:13] == c.th, "p=%v: th %s, want %s", c.p, s.th, c.th)
		back, err := ParseThreshold(s.th)
		require.NoError(t, err)
		// Read back, the threshold gives the probability within the
		// precision of 56 bits.
		assert.InDelta(t, c.p, 1-float64(back)/float64(maxRandomness), 1e-15, "p=%v", c.p)
	}
	assert.Equal(t, maxRandomness, Threshold(0))
	_, err := ParseThreshold("0123456789abcde")
	require.Error(t, err, "15 digits")
	_, err = ParseThreshold("xyz")
	require.Error(t, err)
}

// A session's decision is a function of its id alone, and about the
// configured share of sessions is kept: within four standard deviations
// of the binomial's mean over 20,000 ids, for several ratios.
func TestSessionShare(t *testing.T) {
	const n = 20000
	for _, p := range []float64{0.01, 0.1, 0.5, 0.9} {
		s := New(Config{SessionRatio: p, MaxHeldSpans: 1})
		kept := 0
		for i := range n {
			id := fmt.Sprintf("01J%08d-session", i)
			k := s.SessionKept(id)
			require.Equal(t, k, New(Config{SessionRatio: p, MaxHeldSpans: 1}).SessionKept(id), "the same decision again")
			require.Equal(t, k, Randomness(id) >= Threshold(p), "kept exactly when rv >= th")
			if k {
				kept++
			}
		}
		sd := math.Sqrt(n * p * (1 - p))
		assert.InDelta(t, n*p, float64(kept), 4*sd, "p=%v kept %d of %d", p, kept, n)
	}
	// Kept sessions at a ratio are kept at every higher ratio (the
	// threshold only moves down): sampled sets nest.
	lo, hi := New(Config{SessionRatio: 0.2, MaxHeldSpans: 1}), New(Config{SessionRatio: 0.6, MaxHeldSpans: 1})
	for i := range 2000 {
		id := fmt.Sprintf("s-%d", i)
		if lo.SessionKept(id) {
			require.True(t, hi.SessionKept(id), id)
		}
	}
}

func closed(session string, kind string) *turnengine.Turn {
	return &turnengine.Turn{SessionID: session, Number: 1, StartTime: 1000, EndTime: 2000, EndSeq: 9,
		Reason: sessionlog.Reason{Kind: kind}, Steps: []*turnengine.Step{{Number: 1}}}
}

// Every turn that went wrong is kept whatever the ratio, for the first
// reason that applies; a clean turn is kept with its session.
func TestDecide(t *testing.T) {
	cfg := Config{SessionRatio: 0, MaxHeldSpans: 1,
		KeepOver: Limits{Cost: 0.5, Tokens: 1000, Duration: time.Minute, Steps: 3}}
	s := New(cfg)
	for _, kind := range []string{"error", "max-tokens", "aborted", "blocked", "interrupted", "some-new-kind", ""} {
		assert.Equal(t, Decision{true, Outcome}, s.Decide(closed("a", kind)), kind)
	}
	dangling := closed("a", "")
	dangling.DanglingCause = "timeout"
	assert.Equal(t, Decision{true, Outcome}, s.Decide(dangling))
	late := closed("a", "completed")
	late.Late = &turnengine.LateClose{}
	assert.Equal(t, Decision{true, Outcome}, s.Decide(late))
	for _, kind := range []string{"completed", "forked"} {
		assert.Equal(t, Decision{false, Ratio}, s.Decide(closed("a", kind)), kind)
	}
	found := closed("a", "completed")
	found.Findings = []findings.Finding{{Name: findings.ToolLoop}}
	assert.Equal(t, Decision{true, Finding}, s.Decide(found))

	over := func(f func(*turnengine.Turn)) Decision {
		tt := closed("a", "completed")
		f(tt)
		return s.Decide(tt)
	}
	assert.Equal(t, Decision{true, KeepOver}, over(func(t *turnengine.Turn) { t.Steps = make([]*turnengine.Step, 4) }))
	assert.Equal(t, Decision{false, Ratio}, over(func(t *turnengine.Turn) { t.Steps = make([]*turnengine.Step, 3) }), "at the limit is not over it")
	assert.Equal(t, Decision{true, KeepOver}, over(func(t *turnengine.Turn) { t.Usage.Input, t.Usage.Reasoning = 900, 101 }))
	assert.Equal(t, Decision{true, KeepOver}, over(func(t *turnengine.Turn) { t.Cost = pricing.Cost{Output: 0.6} }))
	assert.Equal(t, Decision{true, KeepOver}, over(func(t *turnengine.Turn) { t.EndTime = t.StartTime + 61_000 }))

	all := New(Config{SessionRatio: 1, MaxHeldSpans: 1})
	assert.Equal(t, Decision{true, Session}, all.Decide(closed("a", "completed")))
	assert.Empty(t, all.TraceState("a"), "no tracestate when everything is kept")
	assert.Empty(t, all.Always())
}

// The tracestate of a session kept by the ratio carries the threshold and
// the session's randomness, which is at least the threshold.
func TestTraceState(t *testing.T) {
	s := New(Config{SessionRatio: 0.5, MaxHeldSpans: 1})
	n := 0
	for i := 0; n < 10; i++ {
		id := fmt.Sprintf("s-%d", i)
		if !s.SessionKept(id) {
			continue
		}
		n++
		ts := s.TraceState(id)
		var rv uint64
		_, err := fmt.Sscanf(ts, "ot=th:8;rv:%014x", &rv)
		require.NoError(t, err, ts)
		require.Len(t, ts, len("ot=th:8;rv:")+14)
		assert.Equal(t, Randomness(id), rv)
		assert.GreaterOrEqual(t, rv, uint64(1)<<55)
	}
	assert.Equal(t, "ot=th:0", s.Always())
}

func TestValidate(t *testing.T) {
	require.NoError(t, Defaults().Validate())
	for _, bad := range []Config{
		{SessionRatio: -0.1, MaxHeldSpans: 1},
		{SessionRatio: 1.5, MaxHeldSpans: 1},
		{SessionRatio: math.NaN(), MaxHeldSpans: 1},
		{SessionRatio: 1},
		{SessionRatio: 1, MaxHeldSpans: 1, KeepOver: Limits{Steps: -1}},
	} {
		require.Error(t, bad.Validate(), "%+v", bad)
	}
}
