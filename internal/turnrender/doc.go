// Package turnrender turns what the turn engine (internal/turnengine)
// closes into OpenTelemetry data: closed turns, live step fragments and
// late closes into spans (Traces, one trace per turn, docs/design.md §4),
// and the engine's observations into cumulative metrics (Metrics, an
// Observer of the engine, written out by AppendTo, docs/design.md §5). The
// span and trace ids are the turn model's (sessionlog/turnmodel) as pdata
// types. It keeps no state but the Metrics' series; the engine is given
// the time, and so is AppendTo.
package turnrender
