// Package sessiontable is the one bounded table of sessions that every
// stateful part of dshtrace keeps: the turn engine's sessions, the
// processor's cursors, the record builder's and reader's per-session
// state, the receiver's deduplication state. It holds the bounds they
// share (how many sessions, how many open turns, how long a silent turn
// stays open) and the order in which sessions leave: least recently active
// first.
//
// A Table does not evict by itself: what leaving means differs (the engine
// closes the session's open turn as dangling and keeps a tombstone of it,
// the receiver's deduplication deletes the session's stored state), so the
// caller asks Full and Oldest and removes. The package
// is pure: no collector imports, no clock.
package sessiontable

import "time"

// The bounds every part defaults to, so that the connector, the processor
// and the receiver forget the same sessions and close the same turns.
const (
	// DefaultMaxSessions bounds the sessions a part remembers.
	DefaultMaxSessions = 100000
	// DefaultMaxOpenTurns bounds the turns open at once.
	DefaultMaxOpenTurns = 100000
	// DefaultDanglingTimeout is the silence (arrival time) after which an
	// open turn is closed as dangling.
	DefaultDanglingTimeout = 15 * time.Minute
)
