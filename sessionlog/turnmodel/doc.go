// Package turnmodel is the one place that says where a dsh session event
// belongs: which turn, step, model attempt and tool call, and so which
// span of the turn's trace. It also holds the one set of rules that pair a
// tool/result with the tool/call it closes.
//
// Everything that needs those answers asks this package: the turn engine
// (which builds the spans), the session_event receiver (which stamps each
// log record with the ids of its span), the turn_state processor (the same
// for records from any source), the validator (which reports results that
// close no call) and the dshtrace CLI (query). So the ids on a log record
// and the ids of the span the connector emits for it agree by
// construction, not by convention.
//
// The package is pure: no collector imports, no clock, no I/O. A Cursor
// follows one session; feed it the session's events in seq order.
package turnmodel
