// Package sessionevent is the session_event receiver: it ingests DeepSeek
// Harness (dsh) session events over HTTP (NDJSON rows of a session, or the
// live transports' wrapped lines) and by tailing dsh session roots (plain
// and zstd generations), and turns every physical row into one log record
// of the contract in docs/design.md §3 (internal/logrecord): resource {session.id},
// Body the row byte for byte, event name, attributes, and the trace and span
// ids of the turn span the event belongs to.
//
// Delivery: an HTTP request is atomic and idempotent by (session id, format
// version, seq); a tailed file is checkpointed through a storage extension
// only after the next consumer accepted its rows.
package sessionevent
