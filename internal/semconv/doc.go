// Package semconv is the one table of attribute keys dshtrace puts on what
// it emits: spans and span events (internal/turnrender, the turn engine),
// metric points, and log records (internal/logrecord, internal/placement,
// the turn_state processor). A key is spelled here only, so a record and
// the span it names cannot drift apart.
//
// The GenAI semantic conventions' keys (v0.1.0, docs/conventions.md) come
// first, then OpenTelemetry's general ones, then dsh's own. A name is its
// key in CamelCase, namespace included (dsh.turn is DshTurn, event.seq
// EventSeq, dsh.event.seq DshEventSeq). The package is pure: constants only.
package semconv
