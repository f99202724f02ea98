package replay

import (
	"slices"
	"strconv"
)

// Range is a run of consecutive seqs, Lo through Hi.
type Range struct{ Lo, Hi int64 }

// String writes the range as "lo–hi", or "lo" for one seq.
func (r Range) String() string {
	if r.Lo == r.Hi {
		return strconv.FormatInt(r.Lo, 10)
	}
	return strconv.FormatInt(r.Lo, 10) + "–" + strconv.FormatInt(r.Hi, 10)
}

// Len is the number of seqs in the range.
func (r Range) Len() int64 { return r.Hi - r.Lo + 1 }

// ranges sorts seqs and folds runs of consecutive ones (repeats dropped).
func ranges(seqs []int64) []Range {
	if len(seqs) == 0 {
		return nil
	}
	s := slices.Clone(seqs)
	slices.Sort(s)
	out := []Range{{s[0], s[0]}}
	for _, q := range s[1:] {
		last := &out[len(out)-1]
		switch {
		case q <= last.Hi:
		case q == last.Hi+1:
			last.Hi = q
		default:
			out = append(out, Range{q, q})
		}
	}
	return out
}

// Sources are the seqs an event cites: directly (its sourceEventSeqs) and,
// following each cited event's own citations, transitively — as
// `dshtrace query --sources SEQ [--transitive]` finds them: only citations
// of events at or before seq count.
func (s *Session) Sources(seq int64) (direct, all []Range) {
	first := s.cites[seq]
	if len(first) == 0 {
		return nil, nil
	}
	direct = ranges(first)
	if !slices.ContainsFunc(first, func(q int64) bool { return q <= seq && len(s.cites[q]) > 0 }) {
		return direct, direct // what it cites cites nothing (a message's chunks)
	}
	seen := map[int64]bool{}
	queue := slices.Clone(first)
	for _, q := range queue {
		seen[q] = true
	}
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		if q > seq {
			continue
		}
		for _, c := range s.cites[q] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	flat := make([]int64, 0, len(seen))
	for q := range seen {
		flat = append(flat, q)
	}
	return direct, ranges(flat)
}
