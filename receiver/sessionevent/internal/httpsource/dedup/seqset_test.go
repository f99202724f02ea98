package dedup

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSeqSet: contains and add agree with a plain set, ranges stay merged,
// and the mark moves as the gaps fill.
func TestSeqSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		s, ref := newSeqSet(), map[int64]bool{}
		for range 60 {
			a := r.Int64N(200)
			b := a + r.Int64N(4)
			s.add(a, b)
			for x := a; x <= b; x++ {
				ref[x] = true
			}
			for x := int64(0); x < 210; x++ {
				if s.contains(x, x) != ref[x] {
					t.Fatalf("round %d: contains(%d) = %v", round, x, !ref[x])
				}
			}
			for i, rg := range s.Ranges {
				assert.Greater(t, rg[0], s.HWM+1, "range above the mark")
				if i > 0 && rg[0] <= s.Ranges[i-1][1]+1 {
					t.Fatalf("ranges not merged: %v", s.Ranges)
				}
			}
		}
	}
	s := newSeqSet()
	s.add(0, 4)
	s.add(6, 9)
	assert.True(t, s.contains(0, 4))
	assert.True(t, s.contains(7, 9))
	assert.False(t, s.contains(3, 7), "a range across the gap")
	s.add(5, 5)
	assert.Equal(t, int64(9), s.HWM)
	assert.Empty(t, s.Ranges)
}

// TestSeqSetBounded: past maxRanges, the oldest gap is given up and
// counted; memory stays bounded.
func TestSeqSetBounded(t *testing.T) {
	s := newSeqSet()
	var abandoned int64
	for i := range int64(maxRanges + 10) {
		abandoned += s.add(2*i+1, 2*i+1) // every other seq: a gap each
	}
	assert.LessOrEqual(t, len(s.Ranges), maxRanges)
	assert.Equal(t, int64(10), abandoned)
	assert.True(t, s.contains(0, 0), "an abandoned gap counts as seen")
}

func TestSeqSetMerge(t *testing.T) {
	a, b := newSeqSet(), newSeqSet()
	a.add(0, 3)
	b.add(0, 1)
	b.add(5, 6)
	b.Header = true
	a.merge(b)
	assert.True(t, a.contains(0, 3) && a.contains(5, 6) && a.Header)
	assert.False(t, a.contains(4, 4))
}
