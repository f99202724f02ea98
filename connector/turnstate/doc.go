// Package turnstate is the turn_state connector: it rebuilds the per-turn
// state of dsh agent sessions from their session events (log records of
// the session_event receiver, or of dsh's own OTLP log export) and emits
// one trace per turn and turn, token and tool metrics. The state machine
// is internal/turnengine; this package adapts it to the collector:
//
//   - share.go: the core shared by the logs→traces and logs→metrics
//     instances of one config, and which of them ingests;
//   - batch.go: a batch of log records read into engine inputs;
//   - connector.go: the core — its lock order, the one drain → emit →
//     journal pass (settle) that batches, the sweep, shutdown and the
//     restore go through, and the sweep and flush loop;
//   - journal.go: the journal — what is written, when, and how it is
//     replayed at start;
//   - config.go, factory.go; internal/metadata: type, stability and
//     self-telemetry instruments.
//
// See README.md.
package turnstate
