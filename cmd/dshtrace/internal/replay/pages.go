package replay

import (
	"slices"
	"strconv"
)

// A session of many turns is served a window at a time. Pages cut the
// session's blocks so that each holds at most n turns (with the rows
// between them); FindPage says which page holds an element, so a link to
// #turn-N, #call-ID, #seq-N or #m-N finds its page.

// Pages cuts the session's blocks into pages of at most n turns each, as
// [from, to) block ranges; a session of at most n turns is one page.
func (s *Session) Pages(n int) [][2]int {
	if n <= 0 || len(s.Turns) <= n {
		return [][2]int{{0, len(s.Blocks)}}
	}
	var out [][2]int
	from, turns := 0, 0
	for i, b := range s.Blocks {
		if b.Turn == nil {
			continue
		}
		if turns == n {
			out = append(out, [2]int{from, i})
			from, turns = i, 0
		}
		turns++
	}
	return append(out, [2]int{from, len(s.Blocks)})
}

// FindPage is the page (of Pages(n)) holding the element id: a turn, a
// step, a call, a row (by seq, member seq or line) or a message; false
// when the session has no such element.
func (s *Session) FindPage(n int, id string) (int, bool) {
	block, ok := s.blockOf(id)
	if !ok {
		return 0, false
	}
	for i, p := range s.Pages(n) {
		if block >= p[0] && block < p[1] {
			return i, true
		}
	}
	return 0, false
}

// blockOf is the block holding element id: a turn's, a step's or a
// call's, else the block of the row it names.
func (s *Session) blockOf(id string) (int, bool) {
	for i, b := range s.Blocks {
		if t := b.Turn; t != nil {
			if t.Anchor == id {
				return i, true
			}
			for _, st := range t.Steps {
				if st.Anchor == id || hasCall(st.Calls, id) {
					return i, true
				}
			}
		}
	}
	row := s.rowNamed(id)
	if row == nil {
		return 0, false
	}
	for i, b := range s.Blocks {
		rows := b.Rows
		if b.Turn != nil {
			rows = b.Turn.Rows
		}
		if slices.Contains(rows, row) {
			return i, true
		}
	}
	return 0, false
}

// rowNamed is the row an element id names: a row's own (seq-N, seq-N~K,
// line-N), a member of a packed row, or a message (shown with its row's
// block); nil when none.
func (s *Session) rowNamed(id string) *Row {
	rest, ok := cutPrefix(id, s.Prefix)
	if !ok {
		return nil
	}
	for _, prefix := range []string{"seq-", "m-"} {
		if n, ok := cutPrefix(rest, prefix); ok {
			if seq, err := strconv.ParseInt(n, 10, 64); err == nil {
				return s.rowOf.get(seq)
			}
		}
	}
	// A repeated seq's row, or a row without events: rare, looked for.
	for _, r := range s.Rows {
		if s.rowID(r) == id {
			return r
		}
	}
	return nil
}

func hasCall(calls []*Call, id string) bool {
	for _, c := range calls {
		if c.Anchor == id || hasCall(c.Subs, id) {
			return true
		}
	}
	return false
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}
