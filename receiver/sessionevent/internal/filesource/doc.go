// Package filesource is the session_event receiver's file transport: it
// tails dsh session roots (docs/format.md §2).
//
// It is a small poller of its own rather than the contrib stanza
// fileconsumer: fileconsumer reads plain and gzip files only, so zstd
// generations — dsh's default encoding — would need a second reader and a
// second checkpoint scheme anyway; it identifies files by their first bytes,
// which dsh headers make alike; and it advances offsets after a failed
// delivery. One poller reads plain and zstd files the same way: rows are
// cut at newlines (plain) or decoded frame by frame (zstd), and a file's
// checkpoint — the offset of the next unread line or frame, plus the
// highest seq emitted — is written through the storage extension only after
// the next consumer accepted the rows before it (package checkpoint).
//
// A row goes one way: the file's bytes (tail.go, plain.go, zstd.go) are
// decoded (sessionlog), placed and turned into a log record (rows.go,
// internal/logrecord), batched and delivered (batch.go).
//
// Restart: a file that grows again is first re-read from its start up to
// the checkpoint without emitting anything, which restores the decoder's
// format and the tracker's turn and step — the records' trace and span ids
// come out as if the collector had never stopped — and then read on.
//
// Truncation and rewrites (dsh truncates a crashed file back to its last
// committed record, then appends): a file shorter than its checkpoint, with
// other bytes before it, or another inode, is read again from the start,
// and rows up to the highest seq already emitted are dropped as duplicates.
package filesource
