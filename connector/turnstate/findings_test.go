package turnstate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// loopingLog is a session whose one turn polls a job four times and gets
// the same answer, then fails three different writes in a row.
func loopingLog(t *testing.T) string {
	same := testlog.Call{Tool: "job_output", Args: `{"job":7}`, Result: "running"}
	fail := func(path string) testlog.Call {
		return testlog.Call{Tool: "write", Args: `{"path":"` + path + `"}`, Result: "denied: " + path, Failed: true}
	}
	p := filepath.Join(t.TempDir(), "looping.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(testlog.SynthCalls("looping-1",
		[]testlog.Call{same, same, same, same, fail("/etc/x"), fail("/etc/y"), fail("/etc/z")}, true)), 0o644))
	return p
}

// rootFindings are the findings on a trace's turn span: its evaluation
// events' names and its dsh.finding.* attributes.
func rootFindings(td ptrace.Traces) (events, attrs []string) {
	for _, sp := range turnSpans(td) {
		for i := 0; i < sp.Events().Len(); i++ {
			ev := sp.Events().At(i)
			if ev.Name() == semconv.GenAIEvaluationResult {
				v, _ := ev.Attributes().Get(semconv.GenAIEvaluationName)
				events = append(events, v.Str())
			}
		}
		for k := range sp.Attributes().All() {
			if len(k) > len(semconv.DshFindingPrefix) && k[:len(semconv.DshFindingPrefix)] == semconv.DshFindingPrefix {
				attrs = append(attrs, k)
			}
		}
	}
	return events, attrs
}

// The connector puts a turn's findings on its root span — an evaluation
// event each, a dsh.finding.<name> attribute — and counts them in
// dsh.turn.findings; a crash mid-turn changes nothing: the journal's
// records rebuild the evidence.
func TestFindingsOnTheTurn(t *testing.T) {
	records, _ := buildRecords(t, loopingLog(t), "looping-1")
	want := []string{findings.ToolLoop, findings.ToolErrorStreak}
	h := newHarness(t, createDefaultConfig(), nil, nil)
	h.start()
	h.feed(records)
	events, attrs := rootFindings(h.allTraces())
	assert.Equal(t, want, events)
	assert.ElementsMatch(t, []string{semconv.DshFindingPrefix + findings.ToolLoop, semconv.DshFindingPrefix + findings.ToolErrorStreak}, attrs)
	h.shutdown()
	m, ok := findMetric(h.lastMetrics(), turnrender.MetricTurnFindings)
	require.True(t, ok, "dsh.turn.findings")
	got := map[string]int64{}
	for i := 0; i < m.Sum().DataPoints().Len(); i++ {
		dp := m.Sum().DataPoints().At(i)
		v, _ := dp.Attributes().Get(semconv.DshFinding)
		got[v.Str()] += dp.IntValue()
	}
	assert.Equal(t, map[string]int64{findings.ToolLoop: 1, findings.ToolErrorStreak: 1, findings.UnansweredToolCall: 0, findings.ModelRetries: 0,
		findings.OverSteps: 0, findings.OverTokens: 0, findings.OverCost: 0, findings.OverDuration: 0}, got, "every finding's series, at zero until seen")

	// Killed after every batch in turn, restarted on its journal.
	bs := batches(records, 5)
	for k := 1; k < len(bs); k++ {
		dir := t.TempDir()
		run1 := journaled(t, dir)
		for _, b := range bs[:k] {
			run1.feed(b)
		}
		run1.crash()
		run2 := journaled(t, dir)
		for _, b := range bs[k:] {
			run2.feed(b)
		}
		events, _ := rootFindings(mergeTraces(run1, run2))
		assert.Equal(t, want, events, "killed after batch %d", k)
		run2.shutdown()
	}
}

// findingsByTurn are the findings on every turn span of td, by trace.
func findingsByTurn(td ptrace.Traces) map[string][]string {
	out := map[string][]string{}
	for _, sp := range turnSpans(td) {
		var names []string
		for i := 0; i < sp.Events().Len(); i++ {
			ev := sp.Events().At(i)
			if ev.Name() == semconv.GenAIEvaluationResult {
				v, _ := ev.Attributes().Get(semconv.GenAIEvaluationName)
				names = append(names, v.Str())
			}
		}
		out[sp.TraceID().String()] = names
	}
	return out
}

// The collector finds what the offline engine (dshtrace findings, the
// replay page) finds, turn by turn: on the repository's logs, on a
// session that loops and fails, and on every corpus log when present.
func TestFindingsAsOffline(t *testing.T) {
	paths := []string{loopingLog(t), filepath.Join("..", "..", "testdata", "findings", "loops.jsonl")}
	for _, l := range testcorpus.Logs(t) {
		paths = append(paths, l.Path)
	}
	total := 0
	for _, p := range paths {
		records, _ := buildRecords(t, p, "s")
		h := newHarness(t, createDefaultConfig(), nil, nil)
		h.start()
		for _, b := range batches(records, 7) {
			h.feed(b)
		}
		h.shutdown()
		_, want := replay(t, p, "s")
		got := findingsByTurn(h.allTraces())
		assert.Equal(t, findingsByTurn(want), got, p)
		for _, names := range got {
			total += len(names)
		}
	}
	assert.GreaterOrEqual(t, total, 5, "the looping sessions' findings were found")
}
