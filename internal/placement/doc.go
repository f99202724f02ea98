// Package placement says, for every session-event log record dshtrace
// stamps, where its event belongs — which turn, step, model attempt and
// tool call, and so which span of the turn's trace — and stamps the record
// with that span's trace and span ids and its placement attributes.
//
// It is the one implementation behind both stampers: the session_event
// receiver (internal/logrecord.Tracker, which builds a record per row) and
// the turn_state processor (which stamps records of any producer). Both
// keep a Table: per session the turn model's cursor (sessionlog/turnmodel)
// and the ids last computed, bounded as the turn engine bounds its
// sessions (turnmodel.Bounds) and closing the same turns — so a stamped
// record names a span the turn_state connector emits, whichever path it
// took.
//
// The rule for a record (Stamp): a record placed in a span carries that
// span's ids and the span's own dsh.turn, dsh.step, gen_ai.tool.call.id and
// dsh.tool.parent_call_id; a record placed in no span carries none of them.
package placement
