// Package metadata holds what mdatagen would generate for turn_state
// (docs/design.md §9.5): its type, stability levels and scope name. It is
// written by hand because mdatagen is not available at our versions;
// ../../metadata.yaml documents the same facts.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the component type of the connector.
var Type = component.MustNewType("turn_state")

// ScopeName is the instrumentation scope of the connector's self-telemetry
// and of the traces and metrics it emits: its Go import path.
const ScopeName = "github.com/dshtrace/dshtrace/connector/turnstate"

// Stability of each signal pair. Development: the span and metric mapping
// and the config keys may still change with dsh's format and the GenAI
// semantic conventions (both still moving), so no compatibility is
// promised yet.
const (
	LogsToTracesStability  = component.StabilityLevelDevelopment
	LogsToMetricsStability = component.StabilityLevelDevelopment
)
