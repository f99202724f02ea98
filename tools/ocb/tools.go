//go:build tools

// Package tools pins the OpenTelemetry Collector Builder (ocb) v0.165.0 that
// generates cmd/otelcol-dsh from builder-config.yaml. The go.mod `tool`
// directive is what builds it (tools/build.sh); this file only keeps the import
// visible.
package tools

import _ "go.opentelemetry.io/collector/cmd/builder"
