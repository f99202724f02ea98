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

// Traces sizes its span slices with spanCount and spansOf: they must count
// exactly the spans it adds for a turn (nested dispatches, failed
// attempts, open steps) and for a live step fragment.
func TestSpanCount(t *testing.T) {
	files := testcorpus.All(t) // our logs and, when found, the real corpus: nested dispatches in both
	turns, fragments := 0, 0
	for _, name := range files {
		for _, live := range []bool{false, true} {
			f, err := os.Open(name)
			require.NoError(t, err)
			e := turnengine.New(turnengine.Config{LiveSteps: live})
			require.NoError(t, turnengine.Replay(e, f, sessionlog.Options{}, "s", time.Unix(1_800_000_000, 0)))
			f.Close()
			for _, turn := range e.Drain() {
				n := Traces(testScope, []*turnengine.Turn{turn}).SpanCount()
				assert.Equal(t, n, spansOf(turn), "%s turn %d (live %v, fragment %v)", name, turn.Number, live, turn.Fragment)
				if turn.Fragment {
					fragments++
					continue
				}
				assert.Equal(t, n, spanCount(turn), "%s turn %d (live %v)", name, turn.Number, live)
				turns++
			}
		}
	}
	assert.Greater(t, turns, 20)
	assert.Greater(t, fragments, 10)
}
