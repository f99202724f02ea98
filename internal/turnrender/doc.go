// Package turnrender turns what the turn engine (internal/turnengine)
// closes into OpenTelemetry data: the metrics aggregator (Metrics, an
// Observer of the engine, rendered as pmetric by AppendTo).
package turnrender
