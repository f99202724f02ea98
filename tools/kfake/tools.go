//go:build tools

// Package tools pins franz-go's fake Kafka cluster (kfake), which main.go
// serves for the e2e test of the Kafka deployment. The go.mod `tool`
// directive names this module's own command, so tools/build.sh builds it
// like the other tools.
package tools

import _ "github.com/twmb/franz-go/pkg/kfake"
