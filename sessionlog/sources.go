package sessionlog

import (
	"fmt"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// decodeSources expands sourceEventSeqs (docs/format.md §5.2) and checks the rules that
// need nothing but the event itself.
func (d *RowDecoder) decodeSources(r *Row, e *Event, src jsontape.Value) {
	e.HasSources = true
	if src.Type() != jsontape.Array {
		r.problem(e.Seq, CodeSourcesInvalid, "sourceEventSeqs must be an array")
		return
	}
	var problem string
	bad := func(format string, args ...any) {
		problem = fmt.Sprintf(format, args...)
	}
	var out []int64
	if n := sourcesLen(src, e.Seq); d.arena != nil {
		out = d.arena.seqs.take(n)[:0]
	} else {
		out = make([]int64, 0, n)
	}
	for el := range src.Elements() {
		switch el.Type() {
		case jsontape.Number:
			n, err := el.Int64()
			if err != nil || n < 0 || n > jsontape.MaxSafeInteger {
				bad("sourceEventSeqs element %s is not a seq", el.Raw())
				break
			}
			out = append(out, n)
		case jsontape.Array:
			first, last, ok := sourceRange(el)
			if !ok {
				bad("sourceEventSeqs range %s must be [first, last] integers", el.Raw())
				break
			}
			if first < 0 || first > last {
				bad("sourceEventSeqs range %s needs integers first ≤ last", el.Raw())
				break
			}
			if e.Seq >= 0 && last >= e.Seq {
				bad("sourceEventSeqs range %s reaches seq %d, not earlier than the event", el.Raw(), last)
				break
			}
			if last-first+1 > int64(maxSourceSeqs-len(out)) {
				bad("sourceEventSeqs expands to more than %d seqs", maxSourceSeqs)
				break
			}
			e.SourcesRanged = true
			for n := first; n <= last; n++ {
				out = append(out, n)
			}
		default:
			bad("sourceEventSeqs element %s is neither a seq nor a [first, last] range", el.Raw())
			break
		}
		if problem != "" {
			break
		}
	}
	if problem != "" {
		r.problem(e.Seq, CodeSourcesInvalid, problem)
		return
	}
	e.Sources = out
	increasing := true
	for i, n := range out {
		if e.Seq >= 0 && n >= e.Seq {
			r.problem(e.Seq, CodeSourcesInvalid, fmt.Sprintf("sourceEventSeqs cites seq %d, not earlier than the event", n))
			return
		}
		if i > 0 && n <= out[i-1] {
			if e.SourcesRanged {
				r.problem(e.Seq, CodeSourcesInvalid, "a range-encoded sourceEventSeqs must be strictly increasing")
				return
			}
			increasing = false
		}
	}
	if !increasing { // only an unsorted list can hide a repeat
		seen := make(map[int64]struct{}, len(out))
		for _, n := range out {
			if _, dup := seen[n]; dup {
				r.problem(e.Seq, CodeSourcesInvalid, fmt.Sprintf("sourceEventSeqs cites seq %d twice", n))
				return
			}
			seen[n] = struct{}{}
		}
	}
}

// maxSourceSeqs bounds how many seqs one sourceEventSeqs may expand to: a
// range pair is a few bytes but can name up to 2^53 seqs. Real citations (a
// compaction's shadowed nodes, an attempt's chunks) stay far below it.
const maxSourceSeqs = 1 << 20

// sourcesLen is how many seqs sourceEventSeqs (an array) expands to when
// it is well formed, at most maxSourceSeqs: the capacity to expand it into
// with one allocation. Malformed entries count as one, and so do ranges
// that reach seq (the event's own, when not negative), which
// decodeSources rejects before expanding them.
func sourcesLen(src jsontape.Value, seq int64) int {
	n := 0
	for el := range src.Elements() {
		if n >= maxSourceSeqs {
			break
		}
		if el.Type() == jsontape.Array {
			if first, last, ok := sourceRange(el); ok && first >= 0 && first <= last && last-first < maxSourceSeqs &&
				(seq < 0 || last < seq) {
				n += int(last - first + 1)
				continue
			}
		}
		n++
	}
	return min(n, maxSourceSeqs)
}

// sourceRange reads a [first, last] pair of integers.
func sourceRange(el jsontape.Value) (first, last int64, ok bool) {
	a, b, ok := el.Pair()
	if !ok {
		return 0, 0, false
	}
	first, err1 := a.Int64()
	last, err2 := b.Int64()
	return first, last, err1 == nil && err2 == nil
}
