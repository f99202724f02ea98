// Package metadata holds what mdatagen would generate for the turn_state
// processor: its type, scope name, stability and self-telemetry
// instruments. Written by hand, because mdatagen is not available at our
// collector version; ../../metadata.yaml documents the same facts.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the processor's component type (the connector's too: a processor
// and a connector may share a type name).
var Type = component.MustNewType("turn_state")

// ScopeName is the instrumentation scope of the processor's self-telemetry:
// the Go import path of the component package.
const ScopeName = "github.com/dshtrace/dshtrace/processor/turnstate"

// LogsStability is the stability of the logs signal. Development, like the
// connector whose span ids it repeats: the ids follow the span mapping,
// which may still change with dsh's format.
const LogsStability = component.StabilityLevelDevelopment
