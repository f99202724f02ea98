package dedup

// maxRanges bounds the accepted ranges kept above a high-water mark.
// Beyond it the oldest gap is given up: the mark moves over it, and rows of
// that gap arriving later are acknowledged as duplicates — as the connector
// gives up on a gap after its gap timeout.
const maxRanges = 256

// seqSet is the set of seqs accepted for one session and format version.
// Its fields are its stored form.
type seqSet struct {
	// HWM: every seq ≤ HWM was accepted (-1: none).
	HWM int64 `json:"hwm"`
	// Ranges are accepted seqs above HWM+1: sorted, disjoint, not adjacent.
	Ranges [][2]int64 `json:"ranges,omitempty"`
	// Header: the header row of this format version was accepted.
	Header bool `json:"header,omitempty"`
}

func newSeqSet() *seqSet { return &seqSet{HWM: -1} }

// contains reports whether every seq of [a, b] was accepted.
func (s *seqSet) contains(a, b int64) bool {
	if b <= s.HWM {
		return true
	}
	for _, r := range s.Ranges {
		if r[0] <= max(a, s.HWM+1) && b <= r[1] {
			return true
		}
		if r[0] > b {
			break
		}
	}
	return false
}

// add marks [a, b] accepted and returns how many never-seen seqs were given
// up to keep the set bounded.
func (s *seqSet) add(a, b int64) (abandoned int64) {
	if b <= s.HWM {
		return 0
	}
	a = max(a, s.HWM+1)
	s.insert(a, b)
	// A range starting right after the mark extends it.
	for len(s.Ranges) > 0 && s.Ranges[0][0] == s.HWM+1 {
		s.HWM = s.Ranges[0][1]
		s.Ranges = s.Ranges[1:]
	}
	for len(s.Ranges) > maxRanges {
		abandoned += s.Ranges[0][0] - s.HWM - 1
		s.HWM = s.Ranges[0][1]
		s.Ranges = s.Ranges[1:]
	}
	if len(s.Ranges) == 0 {
		s.Ranges = nil
	}
	return abandoned
}

// insert adds the range [a, b] (above the mark), merging it with the
// ranges it overlaps or touches.
func (s *seqSet) insert(a, b int64) {
	out := s.Ranges[:0:0]
	placed := false
	for _, r := range s.Ranges {
		switch {
		case r[1]+1 < a:
			out = append(out, r)
		case b+1 < r[0]:
			if !placed {
				out = append(out, [2]int64{a, b})
				placed = true
			}
			out = append(out, r)
		default:
			a, b = min(a, r[0]), max(b, r[1])
		}
	}
	if !placed {
		out = append(out, [2]int64{a, b})
	}
	s.Ranges = out
}

// merge adds every seq of o.
func (s *seqSet) merge(o *seqSet) (abandoned int64) {
	if o.HWM >= 0 {
		abandoned += s.add(0, o.HWM)
	}
	for _, r := range o.Ranges {
		abandoned += s.add(r[0], r[1])
	}
	s.Header = s.Header || o.Header
	return abandoned
}
