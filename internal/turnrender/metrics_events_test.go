package turnrender

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Counting events goes through a per-type shortcut; it must count exactly
// what the capped series would, and stay bounded under many distinct types.
func TestRecordEventShortcut(t *testing.T) {
	m := newMetrics()
	m.SetMaxValues(3)
	for i := range 1000 {
		m.recordEvent("plugin:t"+strconv.Itoa(i%500), epoch)
		m.recordEvent("turn/start", epoch)
	}
	counts := map[string]int64{}
	for _, p := range m.series[MetricSessionEvents] {
		counts[p.attrs.kv[0].v] += p.value
	}
	assert.Equal(t, int64(1000), counts["turn/start"])
	assert.Equal(t, int64(2), counts["plugin:t0"])
	assert.Equal(t, int64(2), counts["plugin:t1"])
	assert.Equal(t, int64(1000-4), counts[OtherValue])
	assert.Len(t, counts, 4)
	assert.LessOrEqual(t, len(m.eventPoints), 4*3)
}
