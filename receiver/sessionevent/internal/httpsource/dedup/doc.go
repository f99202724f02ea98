// Package dedup is what the HTTP source remembers of the rows it accepted,
// so that a row posted again is acknowledged as a duplicate and never
// emitted twice: the session event API is idempotent by (session id,
// format version, seq) (docs/format.md §10.3).
//
// Per session and format version it keeps a high-water mark (every seq up
// to it was accepted) plus at most maxRanges ranges of seqs accepted above
// it; it keeps at most a bound of sessions (sessiontable), least recently
// used first out. A session that leaves is forgotten: in memory at once,
// in the storage extension with the next write. With a storage extension
// the state is written through after every delivered request, so a restart
// does not emit re-posted rows again.
package dedup
