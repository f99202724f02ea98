// Package httpsource is the session_event receiver's HTTP transport
// (docs/design.md §3.2):
//
//	POST /v1/sessions/{session_id}/events   NDJSON rows of one session
//	POST /v1/session-events                 self-describing wrapped lines
//
// 202 {"accepted":N,"duplicates":M}; 400 {"error","line","seq","code"} and
// nothing of the request accepted; 403 a web page of another origin
// (origin.go); 408 a body slower than read_timeout; 413 body or row too
// large; 415 content type; 503 + Retry-After when the pipeline refuses for
// now or the bodies read at once are at max_bytes_in_flight
// (admission.go); 401 from the auth extension (confighttp).
//
// A request is read and judged whole (body.go), its rows not accepted
// before (dedup) become records (internal/logrecord) delivered to the next
// consumer in one call, and only then are they remembered (ingest.go): a
// request is atomic and idempotent by (session id, format version, seq).
package httpsource
