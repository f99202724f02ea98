package turnrender

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
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
		e := turnengine.New(turnengine.Config{})
		require.NoError(t, turnengine.Replay(e, f, sessionlog.Options{}, "s", time.Unix(1_800_000_000, 0)))
		f.Close()
		for _, turn := range e.Drain() {
			assert.Equal(t, Traces([]*turnengine.Turn{turn}).SpanCount(), spanCount(turn), "%s turn %d", name, turn.Number)
			turns++
		}
	}
	assert.Greater(t, turns, 10)
}
