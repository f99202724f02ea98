package replay

import (
	"cmp"
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
	s := seqs
	if !slices.IsSorted(s) {
		s = slices.Clone(seqs)
		slices.Sort(s)
	}
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
	direct = s.cites[seq]
	if len(direct) == 0 {
		return nil, nil
	}
	all = direct
	followed := map[int64]bool{}
	queue := slices.Clone(direct)
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, c := range s.citersIn(x.Lo, min(x.Hi, seq)) {
			if followed[c] {
				continue
			}
			followed[c] = true
			queue = append(queue, s.cites[c]...)
			all = append(slices.Clip(all), s.cites[c]...)
		}
	}
	if len(followed) == 0 {
		return direct, direct // what it cites cites nothing (a message's chunks)
	}
	return direct, merge(all)
}

// citersIn are the seqs from lo to hi of events that cite others.
func (s *Session) citersIn(lo, hi int64) []int64 {
	i, _ := slices.BinarySearch(s.citers, lo)
	j := i
	for j < len(s.citers) && s.citers[j] <= hi {
		j++
	}
	return s.citers[i:j]
}

// merge sorts ranges and joins those that overlap or touch.
func merge(rs []Range) []Range {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b Range) int { return cmp.Compare(a.Lo, b.Lo) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Lo <= last.Hi || r.Lo-1 == last.Hi {
			last.Hi = max(last.Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}
