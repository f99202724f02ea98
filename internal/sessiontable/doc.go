// Package sessiontable is the bounded table of sessions that the stateful
// parts of dshtrace keep — the turn engine's sessions, the placement of
// records, the record reader's decoder state, the receiver's
// deduplication state — and the order in which sessions leave it: least
// recently active first. It knows sessions by id and nothing of what a
// session holds; its callers give it their bound (turnmodel.Bounds for the
// parts that follow turns).
//
// A Table does not evict by itself: what leaving means differs (the engine
// closes the session's open turn as dangling and keeps a tombstone of it,
// the receiver's deduplication deletes the session's stored state), so the
// caller asks Full and Oldest and removes. The package is pure: no
// collector imports, no clock.
package sessiontable
