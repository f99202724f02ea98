package turnrender

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/golden"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

var goldenCases = []struct {
	name, path string
}{
	{"seed-sample", "../../testdata/seed/sample.jsonl"},
	{"v0-end-reasons", "../../testdata/dialects/v0-end-reasons.jsonl"},
	{"v4-end-reasons", "../../testdata/dialects/v4-end-reasons.jsonl"},
	{"v0-parallel-tool-calls", "v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl"},
	{"v0-error-finish", "v0/examples/acp-agent/tests/snapshots/error-finish/session.jsonl"},
	{"v0-cancel", "v0/examples/acp-agent/tests/snapshots/cancel/session.jsonl"},
	{"v0-max-tokens-continue", "v0/examples/acp-agent/tests/snapshots/max-tokens-continue/session.jsonl"},
	{"v0-code-mode-turn", "v0/examples/acp-agent/tests/snapshots/code-mode-turn/session.jsonl"},
	{"v0-tool-outcome-unknown", "v0/examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl"},
	{"v0-pin-turn", "v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl"},
	{"wire-v0-provider-retry", "wire/v0/examples/headless-agent/tests/snapshots/provider-retry/stream-json.expected.jsonl"},
	{"v4-error-finish", "v4/snapshots/session/error-finish/writer.expected.jsonl"},
	{"v4-tool-error-details", "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"},
	{"v4-max-tokens-continue", "v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl"},
}

// Golden traces and metrics for our own logs and a set of corpus files
// (those skip without a corpus). Regenerate with `go test
// ./internal/turnrender -run Golden -update`, and read the diff against the
// log before accepting it.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			path := c.path
			if !strings.HasPrefix(path, "../") {
				path = testcorpus.Path(t, path)
			}
			e, m, turns := replayFile(t, path, turnengine.Config{})
			td := Traces(testScope, turns)
			md := pmetric.NewMetrics()
			m.AppendTo(md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty(), epoch, e.OpenTurns())
			tracesFile := filepath.Join("testdata", "golden", c.name+".traces.yaml")
			metricsFile := filepath.Join("testdata", "golden", c.name+".metrics.yaml")
			if *update {
				if err := golden.WriteTraces(t, tracesFile, td); err != nil {
					t.Fatal(err)
				}
				if err := golden.WriteMetrics(t, metricsFile, md); err != nil {
					t.Fatal(err)
				}
			}
			want, err := golden.ReadTraces(tracesFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := ptracetest.CompareTraces(want, td); err != nil {
				t.Errorf("traces differ from %s: %v", tracesFile, err)
			}
			wantM, err := golden.ReadMetrics(metricsFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := pmetrictest.CompareMetrics(wantM, md, pmetrictest.IgnoreMetricDataPointsOrder(),
				pmetrictest.IgnoreStartTimestamp(), pmetrictest.IgnoreTimestamp()); err != nil {
				t.Errorf("metrics differ from %s: %v", metricsFile, err)
			}
		})
	}
}
