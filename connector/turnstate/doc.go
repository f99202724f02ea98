// Package turnstate is the turn_state connector: it rebuilds the per-turn
// state of dsh agent sessions from their session events (log records of
// the session_event receiver, or of dsh's own OTLP log export) and emits
// one trace per turn and turn, token and tool metrics. The state machine
// is internal/turnengine; this package adapts it to the collector:
//
//   - share.go: the core shared by the logs→traces and logs→metrics
//     instances of one config, and which of them ingests;
//   - batch.go: the decoder — a batch of log records read into engine
//     inputs;
//   - connector.go: the core — its two locks, the one drain → emit →
//     journal pass (settle) that batches, the sweep, shutdown and the
//     restore go through, and the sweep and flush loop;
//   - held.go: the next consumers, and the turns they refused;
//   - sampling.go: which closed turns go out (internal/sampling's
//     decision), and the live steps of dropped sessions held meanwhile;
//   - journal.go: the core's side of the journal — which one it opens,
//     how a session read back is resumed, what a pass writes;
//   - internal/journal: the journal itself, one interface with two
//     implementations, on a storage extension and on a Kafka changelog
//     (internal/changelog), each owning its own state and lock; the
//     changelog's also owns what the kafka receiver's metadata and the
//     group coordinator say of the partitions;
//   - config.go, factory.go; internal/metadata: type, stability and
//     self-telemetry instruments.
//
// See README.md.
package turnstate
