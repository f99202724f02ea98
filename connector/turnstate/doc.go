// Package turnstate is the turn_state connector: it rebuilds the per-turn
// state of dsh agent sessions from their session events (log records of
// the session_event receiver, or of dsh's own OTLP log export) and emits
// one trace per turn and turn, token and tool metrics. The state machine
// is internal/turnengine; this package adapts it to the collector: config,
// factory, the state shared by the logs→traces and logs→metrics instances,
// the sweep and flush loop, and self-telemetry. See README.md.
package turnstate
