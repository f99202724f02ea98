// Package turnstate is the turn_state processor: a logs processor that
// passes dsh session-event log records through and stamps each with the
// trace and span ids of the span its event belongs to — the ids the
// turn_state connector gives that span — and with dsh.turn, dsh.step,
// gen_ai.tool.call.id and dsh.tool.parent_call_id. It places each event with
// internal/placement (the turn model's cursor, the same the connector's
// engine asks, within the connector's bounds), as the session_event
// receiver does, so records from any source (notably dsh's own OTLP log
// export, which carries no trace context) link to the connector's spans.
// See README.md.
package turnstate
