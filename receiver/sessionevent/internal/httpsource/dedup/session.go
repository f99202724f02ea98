package dedup

import "sync/atomic"

// UnknownVersion keys rows whose session never showed a header: live
// streams (SDK notifications, stream-json lines) carry none.
const UnknownVersion = -1

// Session is what is remembered of one session.
type Session struct {
	id string
	// current is the highest header version seen; rows posted without a
	// header are keyed by it (UnknownVersion when none was seen). Atomic:
	// request parsing reads it without the session's stripe lock.
	current atomic.Int64
	// gens are the accepted seqs per format version, touched only under
	// the session's stripe lock (Store.LockSessions).
	gens map[int]*seqSet
}

func newSession(id string, current int) *Session {
	st := &Session{id: id, gens: map[int]*seqSet{}}
	st.current.Store(int64(current))
	return st
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Version is the highest header version seen (UnknownVersion: none).
func (s *Session) Version() int { return int(s.current.Load()) }

func (s *Session) gen(version int) *seqSet {
	g := s.gens[version]
	if g == nil {
		g = newSeqSet()
		s.gens[version] = g
	}
	return g
}

// Known is what a session's state says was accepted of the format version
// a request's rows are keyed by.
type Known struct {
	// Version keys the rows: the request's header version, else the
	// version remembered for the session (UnknownVersion: none yet).
	Version int
	// Adopt: the request brings the session's first header, so the rows
	// accepted before under UnknownVersion (prior) count as its version's.
	Adopt bool
	gen   *seqSet // nil: nothing accepted under Version
	prior *seqSet
}

// Known returns what was accepted of the rows of a request that carries
// a header of headerVersion (hasHeader) or none.
func (s *Session) Known(hasHeader bool, headerVersion int) Known {
	k := Known{Version: s.Version()}
	if hasHeader {
		k.Version = headerVersion
		k.Adopt = s.Version() == UnknownVersion && s.gens[UnknownVersion] != nil
	}
	k.gen = s.gens[k.Version]
	if k.Adopt {
		k.prior = s.gens[UnknownVersion]
	}
	return k
}

// Header reports whether the header row was accepted before.
func (k Known) Header() bool {
	return k.gen != nil && k.gen.Header || k.Adopt && k.prior.Header
}

// Contains reports whether every seq of [a, b] was accepted before.
func (k Known) Contains(a, b int64) bool {
	return k.gen != nil && k.gen.contains(a, b) || k.Adopt && k.prior.contains(a, b)
}

// Adopt makes the rows accepted under UnknownVersion rows of version (the
// session's first header came). It returns how many never-seen seqs were
// given up to keep the state bounded.
func (s *Session) Adopt(version int) (abandoned int64) {
	prior := s.gens[UnknownVersion]
	if prior == nil {
		return 0
	}
	abandoned = s.gen(version).merge(prior)
	delete(s.gens, UnknownVersion)
	return abandoned
}

// AcceptHeader remembers the header row of version as accepted; rows
// posted later without a header are keyed by the highest version seen.
func (s *Session) AcceptHeader(version int) {
	s.gen(version).Header = true
	s.current.Store(int64(max(s.Version(), version)))
}

// Accept remembers the seqs [a, b] of version as accepted. It returns how
// many never-seen seqs were given up to keep the state bounded.
func (s *Session) Accept(version int, a, b int64) (abandoned int64) {
	return s.gen(version).add(a, b)
}
