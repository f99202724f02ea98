package replay

import "strconv"

// A session's messages are kept in the order they were projected, each
// found from the row that holds its seq — a lookup in the seq index, not a
// map of a hundred thousand messages. A seq whose row already finds
// another message (a hostile log's repeated seq, a row of several
// messages) is found from a map.

// message is a projected message and whether the page has a place that
// shows it in full (its home, element id m-SEQ).
type message struct {
	Msg
	home bool
}

// message is the message seq projects, nil when none.
func (s *Session) message(seq int64) *message {
	if r := s.rowOf.get(seq); r != nil && r.msg > 0 && s.msgs[r.msg-1].Seq == seq {
		return &s.msgs[r.msg-1]
	}
	if i, ok := s.msgOther[seq]; ok {
		return &s.msgs[i]
	}
	return nil
}

// setMessage records the message seq projects; the latest projection of a
// seq stands. row is the row being read, about to hold seq if no row does.
func (s *Session) setMessage(m Msg, row *Row) {
	if old := s.message(m.Seq); old != nil {
		old.Msg = m
		return
	}
	s.msgs = append(s.msgs, message{Msg: m})
	holder := s.rowOf.get(m.Seq)
	if holder == nil {
		holder = row
	}
	if holder.msg == 0 {
		holder.msg = int32(len(s.msgs))
		return
	}
	if s.msgOther == nil {
		s.msgOther = map[int64]int32{}
	}
	s.msgOther[m.Seq] = int32(len(s.msgs) - 1)
}

// homeID is the element id of a message's home, "" when it has none.
func (s *Session) homeID(seq int64) string {
	if m := s.message(seq); m != nil && m.home {
		return s.Prefix + "m-" + strconv.FormatInt(seq, 10)
	}
	return ""
}

// home writes the element id of a message's home (nothing when it has
// none) and reports whether it has one.
func (h *hbuf) home(s *Session, seq int64) bool {
	if m := s.message(seq); m == nil || !m.home {
		return false
	}
	h.text(s.Prefix)
	h.WriteString("m-")
	h.int(seq)
	return true
}
