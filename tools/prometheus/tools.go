//go:build tools

// Package tools pins Prometheus 3.16 (module v0.316.0) and its promtool for the
// end-to-end and rule tests. The go.mod `tool` directives are what build them
// (tools/build.sh); this file only keeps the imports visible.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
