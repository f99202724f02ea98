//go:build tools

// Package tools pins Jaeger v2 (module v1.76.0, cmd/jaeger) for the end-to-end
// tests. The go.mod `tool` directive is what builds it (tools/build.sh); this
// file only keeps the import visible to readers and to older tooling.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
