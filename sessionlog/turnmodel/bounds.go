package turnmodel

import "time"

// Bounds are the limits on what a follower of many sessions keeps: the
// turn engine, which closes turns by them, and whatever places events in
// the engine's spans (the session_event receiver, the turn_state
// processor), which must close the same turns to name the same spans.
// They are declared and defaulted here only.
type Bounds struct {
	// MaxSessions bounds the sessions followed; the least recently active
	// is forgotten, its open turn closed (dangling, cause evicted).
	MaxSessions int
	// MaxOpenTurns bounds the turns open at once; at the bound the oldest
	// is closed (dangling, cause evicted).
	MaxOpenTurns int
	// DanglingTimeout is the silence, on arrival time, after which a
	// session's open turn is closed (dangling, cause timeout).
	DanglingTimeout time.Duration
}

// The default bounds.
const (
	DefaultMaxSessions     = 100000
	DefaultMaxOpenTurns    = 100000
	DefaultDanglingTimeout = 15 * time.Minute
)

// DefaultBounds are the bounds every part takes when none is configured.
func DefaultBounds() Bounds {
	return Bounds{MaxSessions: DefaultMaxSessions, MaxOpenTurns: DefaultMaxOpenTurns, DanglingTimeout: DefaultDanglingTimeout}
}

// WithDefaults is b with each bound that is not positive set to its
// default.
func (b Bounds) WithDefaults() Bounds {
	if b.MaxSessions <= 0 {
		b.MaxSessions = DefaultMaxSessions
	}
	if b.MaxOpenTurns <= 0 {
		b.MaxOpenTurns = DefaultMaxOpenTurns
	}
	if b.DanglingTimeout <= 0 {
		b.DanglingTimeout = DefaultDanglingTimeout
	}
	return b
}
