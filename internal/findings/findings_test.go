package findings_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// turnOf runs a synthesized log through the turn engine and returns its
// one turn.
func turnOf(t *testing.T, log string, cfg findings.Config) *turnengine.Turn {
	t.Helper()
	e := turnengine.New(turnengine.Config{Findings: cfg})
	dec, err := sessionlog.NewDecoder(strings.NewReader(log), sessionlog.Options{})
	require.NoError(t, err)
	defer dec.Close()
	now := time.Unix(0, 0)
	for {
		row, err := dec.Next()
		if err != nil {
			break
		}
		for i := range row.Events {
			e.Ingest(turnengine.Input{SessionID: "s", Event: &row.Events[i], Format: dec.Format(), Header: dec.Header()}, now)
		}
	}
	e.Flush(turnengine.CauseEndOfInput, now)
	turns := e.Drain()
	require.Len(t, turns, 1)
	return turns[0]
}

func names(fs []findings.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

func TestRules(t *testing.T) {
	same := testlog.Call{Tool: "job_output", Args: `{"job": 7}`, Result: "running"}
	sameReordered := testlog.Call{Tool: "job_output", Args: `{ "job":7 }`, Result: "running"}
	fail := func(n int) testlog.Call {
		return testlog.Call{Tool: "write", Args: `{"path":"/etc/x"}`, Result: "denied " + string(rune('a'+n)), Failed: true}
	}
	ok := testlog.Call{Tool: "read", Args: `{"path":"a"}`, Result: "hello"}
	for _, c := range []struct {
		name  string
		calls []testlog.Call
		end   bool
		cfg   findings.Config
		want  []string
		seqs  []int64 // of the first finding, when set
	}{
		{"a loop: same call, same result, three times (arguments compared canonically)", []testlog.Call{same, same, sameReordered}, true, findings.Config{},
			[]string{findings.ToolLoop}, []int64{3, 4, 8, 9, 13, 14}},
		{"a poll whose result changes is no loop", []testlog.Call{same, same, {Tool: "job_output", Args: `{"job":7}`, Result: "done"}}, true, findings.Config{},
			nil, nil},
		{"twice is no loop", []testlog.Call{same, same}, true, findings.Config{}, nil, nil},
		{"three failures in a row", []testlog.Call{ok, fail(1), fail(2), fail(3), ok}, true, findings.Config{},
			[]string{findings.ToolErrorStreak}, nil},
		{"a success between failures breaks the streak", []testlog.Call{fail(1), fail(2), ok, fail(3), fail(4)}, true, findings.Config{}, nil, nil},
		{"a call without a result in a turn dsh ended", []testlog.Call{ok, {Tool: "bash", Args: `{}`, NoResult: true}}, true, findings.Config{},
			[]string{findings.UnansweredToolCall}, nil},
		{"a dangling turn's missing result is no finding", []testlog.Call{ok, {Tool: "bash", Args: `{}`, NoResult: true}}, false, findings.Config{}, nil, nil},
		{"budgets, off until set", []testlog.Call{ok, ok}, true, findings.Config{}, nil, nil},
		{"budgets over", []testlog.Call{ok, ok}, true, findings.Config{LoopRepeats: 3, ErrorStreak: 3, Retries: 3, MaxSteps: 1, MaxTokens: 10, MaxDuration: time.Millisecond},
			[]string{findings.OverSteps, findings.OverTokens, findings.OverDuration}, nil},
		{"thresholds set", []testlog.Call{same, same}, true, findings.Config{LoopRepeats: 2, ErrorStreak: 3, Retries: 3},
			[]string{findings.ToolLoop}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			turn := turnOf(t, testlog.SynthCalls("s", c.calls, c.end), c.cfg)
			assert.Equal(t, c.want, names(turn.Findings))
			if c.seqs != nil && len(turn.Findings) > 0 {
				assert.Equal(t, c.seqs, turn.Findings[0].Seqs)
			}
			for _, f := range turn.Findings {
				assert.NotEmpty(t, f.Explanation)
				assert.NotEmpty(t, f.Seqs)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, findings.Defaults().Validate())
	assert.ErrorContains(t, findings.Config{LoopRepeats: 1, ErrorStreak: 3}.Validate(), "loop_repeats must be at least 2, got 1")
	assert.ErrorContains(t, findings.Config{LoopRepeats: 3, ErrorStreak: 3, Retries: 3, MaxCost: -1}.Validate(), "must not be negative")
	assert.ErrorContains(t, findings.Config{LoopRepeats: 3, ErrorStreak: 3}.Validate(), "retries must be at least 1, got 0")
}

// Three model calls retried in a turn (llm/retry-started) are
// model_retries; two are not.
func TestModelRetries(t *testing.T) {
	log := testlog.SynthCalls("s", []testlog.Call{{Tool: "read", Args: `{}`, Result: "x"}}, true)
	lines := strings.SplitAfter(log, "\n")
	retry := func(seq int) string {
		return fmt.Sprintf(`{"type":"llm/retry-started","seq":%d,"time":1800000000001,"data":{"retryId":"r-%d","turn":1,"step":1,"retry":%d}}`+"\n", seq, seq, seq)
	}
	for _, n := range []int{2, 3} {
		// The retries right after step/start (seq 1), the later seqs moved up by n.
		var b strings.Builder
		b.WriteString(lines[0] + lines[1] + lines[2])
		for i := 0; i < n; i++ {
			b.WriteString(retry(2 + i))
		}
		for _, l := range lines[3:] {
			b.WriteString(shiftSeq(l, n))
		}
		turn := turnOf(t, b.String(), findings.Defaults())
		if n < 3 {
			assert.Empty(t, names(turn.Findings), "%d retries", n)
			continue
		}
		require.Equal(t, []string{findings.ModelRetries}, names(turn.Findings))
		assert.Equal(t, []int64{2, 3, 4}, turn.Findings[0].Seqs)
	}
}

// shiftSeq moves a row's "seq" (and a cited seq) up by n.
func shiftSeq(line string, n int) string {
	re := regexp.MustCompile(`("seq":|"sourceEventSeqs":\[)(\d+)`)
	return re.ReplaceAllStringFunc(line, func(m string) string {
		sub := re.FindStringSubmatch(m)
		v, _ := strconv.Atoi(sub[2])
		return sub[1] + strconv.Itoa(v+n)
	})
}
