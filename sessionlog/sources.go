package sessionlog

import (
	"fmt"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// decodeSources expands sourceEventSeqs (docs/format.md §5.2) and checks
// the rules that need nothing but the event itself.
func (d *RowDecoder) decodeSources(r *Row, e *Event, src jsontape.Value) {
	e.HasSources = true
	if src.Type() != jsontape.Array {
		r.problem(e.Seq, CodeSourcesInvalid, "sourceEventSeqs must be an array")
		return
	}
	var out []int64
	if n := sourcesLen(src, e.Seq); d.arena != nil {
		out = d.arena.seqs.take(n)[:0]
	} else {
		out = make([]int64, 0, n)
	}
	out, problem := expandSources(out, e, src)
	if problem == "" {
		e.Sources = out
		problem = sourcesOrder(e)
	}
	if problem != "" {
		r.problem(e.Seq, CodeSourcesInvalid, problem)
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

// expandSources appends to out the seqs that e's sourceEventSeqs, src,
// names (seqs and [first, last] ranges), or says what is wrong with its
// first malformed entry.
func expandSources(out []int64, e *Event, src jsontape.Value) ([]int64, string) {
	problem := ""
	for el := range src.Elements() {
		switch el.Type() {
		case jsontape.Number:
			if n, err := el.Int64(); err == nil && n >= 0 && n <= jsontape.MaxSafeInteger {
				out = append(out, n)
			} else {
				problem = fmt.Sprintf("sourceEventSeqs element %s is not a seq", el.Raw())
			}
		case jsontape.Array:
			if out, problem = appendSourceRange(out, el, e.Seq); problem == "" {
				e.SourcesRanged = true
			}
		default:
			problem = fmt.Sprintf("sourceEventSeqs element %s is neither a seq nor a [first, last] range", el.Raw())
		}
		if problem != "" {
			break // not return, which costs on every turn of a range over a function
		}
	}
	return out, problem
}

// appendSourceRange appends the seqs of a [first, last] range, el, to out;
// the range must end before seq (the event's own, when not negative).
func appendSourceRange(out []int64, el jsontape.Value, seq int64) ([]int64, string) {
	first, last, ok := sourceRange(el)
	switch {
	case !ok:
		return out, fmt.Sprintf("sourceEventSeqs range %s must be [first, last] integers", el.Raw())
	case first < 0 || first > last:
		return out, fmt.Sprintf("sourceEventSeqs range %s needs integers first ≤ last", el.Raw())
	case seq >= 0 && last >= seq:
		return out, fmt.Sprintf("sourceEventSeqs range %s reaches seq %d, not earlier than the event", el.Raw(), last)
	case last-first+1 > int64(maxSourceSeqs-len(out)):
		return out, fmt.Sprintf("sourceEventSeqs expands to more than %d seqs", maxSourceSeqs)
	}
	for n := first; n <= last; n++ {
		out = append(out, n)
	}
	return out, ""
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

// sourcesOrder checks the order of e's expanded sources: every seq earlier
// than the event, strictly increasing when range-encoded, none twice.
func sourcesOrder(e *Event) string {
	increasing := true
	for i, n := range e.Sources {
		if e.Seq >= 0 && n >= e.Seq {
			return fmt.Sprintf("sourceEventSeqs cites seq %d, not earlier than the event", n)
		}
		if i > 0 && n <= e.Sources[i-1] {
			if e.SourcesRanged {
				return "a range-encoded sourceEventSeqs must be strictly increasing"
			}
			increasing = false
		}
	}
	if !increasing { // only an unsorted list can hide a repeat
		seen := make(map[int64]struct{}, len(e.Sources))
		for _, n := range e.Sources {
			if _, dup := seen[n]; dup {
				return fmt.Sprintf("sourceEventSeqs cites seq %d twice", n)
			}
			seen[n] = struct{}{}
		}
	}
	return ""
}
