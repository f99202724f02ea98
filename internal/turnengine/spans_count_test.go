package turnengine

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Traces sizes its span slice with spanCount: it must count exactly the
// spans appendTurn adds (nested dispatches, failed attempts, open steps).
func TestSpanCount(t *testing.T) {
	files := testcorpus.All(t) // our logs and, when found, the real corpus: nested dispatches in both
	turns := 0
	for _, name := range files {
		f, err := os.Open(name)
		require.NoError(t, err)
		e := New(Config{})
		require.NoError(t, Replay(e, f, sessionlog.Options{}, "s", time.Unix(1_800_000_000, 0)))
		f.Close()
		for _, turn := range e.Drain() {
			assert.Equal(t, Traces([]*Turn{turn}).SpanCount(), spanCount(turn), "%s turn %d", name, turn.Number)
			turns++
		}
	}
	assert.Greater(t, turns, 10)
}

// Finish reasons in the conventions' values; a generation that ended
// abnormally — failed, cancelled, or with no finish and no message —
// reports "error".
func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		committed bool
		want      string
	}{
		{"", false, "error"}, {"", true, ""}, {"stop", true, "stop"}, {"tool-calls", true, "tool_call"},
		{"max-tokens", true, "length"}, {"error", false, "error"}, {"aborted", false, "error"}, {"aborted", true, "error"},
		{"some-new-kind", true, "some-new-kind"},
	} {
		if got := finishReason(&Attempt{FinishKind: tc.kind, Committed: tc.committed}); got != tc.want {
			t.Errorf("finish %q committed %v: %q, want %q", tc.kind, tc.committed, got, tc.want)
		}
	}
}
