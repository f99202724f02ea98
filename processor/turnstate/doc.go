// Package turnstate is the turn_state processor: a logs processor that
// passes dsh session-event log records through and stamps each with the
// trace and span ids of the span its event belongs to — the ids the
// turn_state connector gives that span — and with dsh.turn, dsh.step and
// gen_ai.tool.call.id. It follows each session with the turn model's
// cursor (sessionlog/turnmodel), the same the connector's engine asks, so
// records from any source (notably dsh's own OTLP log export, which
// carries no trace context) link to the connector's spans. See README.md.
package turnstate
