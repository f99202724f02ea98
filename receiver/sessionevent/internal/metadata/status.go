// Package metadata holds what mdatagen would generate for the session_event
// receiver (docs/design.md §9.5): its type, scope name, stability and
// self-telemetry instruments. Written by hand; metadata.yaml documents it.
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

// Type is the receiver's component type.
var Type = component.MustNewType("session_event")

// ScopeName is the instrumentation scope of the receiver's self-telemetry:
// the Go import path of the component package.
const ScopeName = "github.com/dshtrace/dshtrace/receiver/sessionevent"

// LogsStability is the stability of the logs signal.
const LogsStability = component.StabilityLevelDevelopment
