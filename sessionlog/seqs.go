package sessionlog

import (
	"fmt"
	"slices"
)

// Dense seqs (docs/format.md §4, §11.2): every event's seq follows the one
// before it. A gap inside the open step is held until the step's
// assistant/message cites every missing seq (an elided chunk run, as dsh's
// snapshot writer leaves) or the step closes.

// seqJump judges the seq of an event that is the first or does not follow
// the one before, and reports whether it repeats or goes back, which ends
// the event's checks.
func (v *Validator) seqJump(e *Event, f Format, out []Violation) ([]Violation, bool) {
	switch {
	case !v.started:
		v.started, v.joinedAt = true, e.Seq
		if f.FromHeader && e.Seq != 0 && !v.resync {
			out = violation(out, e, CodeSeqNotZero, "the first event of a session file must have seq 0, got %d", e.Seq)
		}
	case e.Seq == v.lastSeq:
		return violation(out, e, CodeSeqDuplicate, "seq %d repeats the previous event's seq", e.Seq), true
	case e.Seq < v.lastSeq:
		return violation(out, e, CodeSeqRegression, "seq %d goes back after seq %d", e.Seq, v.lastSeq), true
	case !v.resync:
		g := seqGap{line: e.Row.Line, seq: e.Seq, from: v.lastSeq + 1, to: e.Seq - 1, prev: v.lastSeq}
		if v.openStep != 0 && e.Type == "assistant/chunk" {
			v.gaps = append(v.gaps, g)
		} else {
			out = v.reportGap(g, out)
		}
	}
	return out, false
}

// reportGap appends the violation of a gap.
func (v *Validator) reportGap(g seqGap, out []Violation) []Violation {
	return append(out, Violation{Line: g.line, Seq: g.seq, Code: CodeSeqGap,
		Message: fmt.Sprintf("seq %d follows seq %d: seqs %d–%d are missing", g.seq, g.prev, g.from, g.to)})
}

// citeGaps drops the held gaps whose every seq the message cites as its chunks.
func (v *Validator) citeGaps(e *Event) {
	if len(v.gaps) == 0 || !e.HasSources || !slices.IsSorted(e.Sources) {
		return
	}
	v.gaps = slices.DeleteFunc(v.gaps, func(g seqGap) bool {
		i, found := slices.BinarySearch(e.Sources, g.from)
		if !found {
			return false
		}
		// Sources are unique and sorted: from..to are all cited when the
		// entry to-from places on is to.
		return int64(len(e.Sources)-i) > g.to-g.from && e.Sources[i+int(g.to-g.from)] == g.to
	})
}

// flushGaps reports the gaps no message explained.
func (v *Validator) flushGaps(out []Violation) []Violation {
	for _, g := range v.gaps {
		out = v.reportGap(g, out)
	}
	v.gaps = v.gaps[:0]
	return out
}
