// Package metadata holds what mdatagen would generate for the
// session_archive exporter (docs/design.md §9.5): its type, scope name,
// stability and self-telemetry instruments. Written by hand; the
// component's metadata.yaml documents the same facts.
package metadata

import "go.opentelemetry.io/collector/component"

// Type is the exporter's component type.
var Type = component.MustNewType("session_archive")

// ScopeName is the instrumentation scope of the exporter's self-telemetry:
// the Go import path of the component package.
const ScopeName = "github.com/dshtrace/dshtrace/exporter/sessionarchive"

// LogsStability is the stability of the logs signal. Development: the
// archive follows dsh's on-disk format, which is still moving.
const LogsStability = component.StabilityLevelDevelopment
