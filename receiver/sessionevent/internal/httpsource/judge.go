package httpsource

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// contextFree are the violations an event shows on its own; they are
// judged in every request. The others need the log from its start.
var contextFree = map[string]bool{
	sessionlog.CodeSurfaceOpMissing:    true,
	sessionlog.CodeSurfaceKeysLogged:   true,
	sessionlog.CodeSourcesForbidden:    true,
	sessionlog.CodeEnvelopeInvalid:     true,
	sessionlog.CodeSystemForbidden:     true,
	sessionlog.CodeErrorWithoutIsError: true,
}

// finish orders the session's rows by seq, folds byte-identical repeats,
// refuses conflicting ones, and validates the rows.
//
// Rows may come in any order and any batching, so what a request can be
// judged on depends on what it holds. A request that holds the session from
// its start (seq 0) is checked against every invariant of docs/format.md §11 —
// dense seqs, turn and step nesting, tool calls resolved, replace ranges on
// the surface — as dsh itself would check the file. Any other request can
// only be checked row by row (the rows' own decoding, surface keys), and
// what precedes it is the connector's to judge, gaps included.
//
// A session decoded shallowly that turns out to hold seq 0 is decoded again
// in full first (redecode): the invariants read what a shallow decode skips.
func (s *parsedSession) finish(maxLine int, arena *sessionlog.Arena) *reqError {
	if s.shallow && slices.ContainsFunc(s.rows, func(r *sessionlog.Row) bool { return r.FirstSeq() == 0 }) {
		if rerr := s.redecode(maxLine, arena); rerr != nil {
			return rerr
		}
	}
	slices.SortStableFunc(s.rows, func(a, b *sessionlog.Row) int { return cmp.Compare(a.FirstSeq(), b.FirstSeq()) })
	kept := s.rows[:0]
	for _, r := range s.rows {
		if n := len(kept); n > 0 && r.FirstSeq() <= kept[n-1].LastSeq() {
			prev := kept[n-1]
			if r.FirstSeq() == prev.FirstSeq() && bytes.Equal(r.Bytes, prev.Bytes) {
				s.dups++
				continue
			}
			return rowError(sessionlog.Violation{Line: r.Line, Seq: r.FirstSeq(), Code: sessionlog.CodeSeqDuplicate,
				Message: fmt.Sprintf("seq %d is also on line %d, with other content", r.FirstSeq(), prev.Line)})
		}
		kept = append(kept, r)
	}
	s.rows = kept

	whole := len(s.rows) > 0 && s.rows[0].FirstSeq() == 0
	f := s.dec.Format()
	v := sessionlog.NewValidator()
	v.TrackSurface(whole)
	judge := func(vs []sessionlog.Violation) *reqError {
		for _, x := range vs {
			if x.Code == sessionlog.CodeSeededMismatch {
				continue // needs the whole log; a request may be a prefix
			}
			if whole || contextFree[x.Code] {
				return rowError(x)
			}
		}
		return nil
	}
	if s.header != nil {
		if rerr := judge(v.Row(s.header, f)); rerr != nil {
			return rerr
		}
	}
	for _, r := range s.rows {
		if rerr := judge(v.Row(r, f)); rerr != nil {
			return rerr
		}
	}
	return judge(v.Finish(f))
}

// redecode decodes the session's rows again, in full and in the order they
// came, from the format its decoder began with. The rows' kinds and
// problems are those the shallow decode found (sessionlog SetShallow), so
// what was checked of them holds; lines that carried no session content
// (RowOther) are no evidence of a format and are not read again.
func (s *parsedSession) redecode(maxLine int, arena *sessionlog.Arena) *reqError {
	dec := sessionlog.NewRowDecoder(maxLine, 0)
	dec.SetArena(arena)
	if s.start.Known {
		dec.SetFormat(s.start)
	}
	again := func(r *sessionlog.Row) (*sessionlog.Row, *reqError) {
		row, err := dec.Decode(r.Bytes, r.Line)
		if err != nil {
			return nil, versionError(err, r.Line)
		}
		return row, nil
	}
	header := s.header
	for i, r := range s.rows {
		if header != nil && i == s.headerAt {
			var rerr *reqError
			if s.header, rerr = again(header); rerr != nil {
				return rerr
			}
		}
		var rerr *reqError
		if s.rows[i], rerr = again(r); rerr != nil {
			return rerr
		}
	}
	if header != nil && s.headerAt == len(s.rows) {
		var rerr *reqError
		if s.header, rerr = again(header); rerr != nil {
			return rerr
		}
	}
	s.dec, s.shallow, s.redecoded = dec, false, true
	return nil
}
