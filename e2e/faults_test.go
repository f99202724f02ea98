//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// restartCollector prepares docs/operating.md's restart configuration
// (testdata/collector/restart.yaml, with the restart-<overlay>.yaml
// overlays) in dir: spans to Jaeger at j, the log rows to sink.
func restartCollector(t *testing.T, dir string, j jaegerPorts, sink *otlpSink, overlays ...string) *collector {
	t.Helper()
	configs := []string{testConfig("restart")}
	for _, o := range overlays {
		configs = append(configs, testConfig("restart-"+o))
	}
	return newCollector(t, dir, configs...).toJaeger(j).toSink(sink)
}

// TestRestartCheckNamesTheLoss: each configuration that cannot keep the
// turns open at a restart is named at start, one line with its fix; the
// restart configuration itself gets none.
func TestRestartCheckNamesTheLoss(t *testing.T) {
	for _, c := range []struct {
		name    string
		overlay []string // restart-<overlay>.yaml on restart.yaml
		says    string   // in the line, or "" for no line
		fix     string
	}{
		{"restart configuration", nil, "", ""},
		{"no journal", []string{"no-journal"}, `connector "turn_state" keeps no journal`, "set connectors::turn_state::storage"},
		{"queue in memory", []string{"memory-queue"}, `exporter "otlp_grpc/jaeger" keeps its sending queue in memory`,
			"set exporters::otlp_grpc/jaeger::sending_queue::storage"},
		{"batch after turn_state", []string{"batch-after"}, `processor "batch" holds spans in memory`, "sending_queue::batch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The check is made at the start: no Jaeger is needed behind
			// the exporter's address.
			p := restartCollector(t, t.TempDir(), newJaegerPorts(t), startCountingSink(t), c.overlay...).start("otelcol-dsh")
			var lines []string
			for _, l := range strings.Split(p.output(), "\n") {
				if strings.Contains(l, "restartcheck") {
					lines = append(lines, l)
				}
			}
			if c.says == "" {
				if len(lines) > 0 {
					errorf(t, "the restart configuration was named:\n%s", strings.Join(lines, "\n"))
				}
				return
			}
			if len(lines) != 1 {
				fatalf(t, "want one restartcheck line, got %d:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			for _, want := range []string{c.says, c.fix, "docs/operating.md"} {
				if !strings.Contains(lines[0], want) {
					errorf(t, "the line does not say %q:\n%s", want, lines[0])
				}
			}
			t.Logf("%s", lines[0])
		})
	}
}

// stateFiles lists the storage files in dir.
func stateFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.Contains(e.Name(), ".damaged-") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
