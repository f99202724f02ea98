package sessionevent

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

// sumByAttrs reads a counter's points keyed by their attribute set.
func sumByAttrs(t *testing.T, tt *componenttest.Telemetry, name string) map[string]int64 {
	t.Helper()
	m, err := tt.GetMetric(name)
	require.NoError(t, err, name)
	out := map[string]int64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[attrKey(p.Attributes)] += p.Value
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			out[attrKey(p.Attributes)] = p.Value
		}
	default:
		t.Fatalf("%s: unexpected %T", name, m.Data)
	}
	return out
}

func attrKey(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		if kv.Key == "receiver" {
			continue
		}
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	return strings.Join(parts, ",")
}

// TestTelemetry: the receiver's own counters and gauges, and obsreport's,
// from both sources.
func TestTelemetry(t *testing.T) {
	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	set.TelemetrySettings = tt.NewTelemetrySettings()

	root := t.TempDir()
	rows := v4Rows("f", 0, 3)
	writeFile(t, sessionPath(root, "f", "session.v4.jsonl"), lines(append(rows, "{not json")))
	cfg := httpOnlyConfig()
	f := filesOnlyConfig(pattern(root), nil).Files.Get()
	cfg.Files = configoptional.Some(*f)
	sink := new(consumertest.LogsSink)
	s := startWith(t, cfg, sink, nil, set)
	waitRecords(t, sink, len(rows))

	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	n := len(nonBlankLines(file))
	require.Equal(t, http.StatusAccepted, post(t, sessionURL(s, "s"), file).status)
	require.Equal(t, http.StatusAccepted, post(t, sessionURL(s, "s"), file).status)
	require.Equal(t, http.StatusBadRequest, post(t, sessionURL(s, "s"), []byte("{\n")).status)
	require.Equal(t, http.StatusUnsupportedMediaType, post(t, sessionURL(s, "s"), file, "Content-Type", "image/png").status)

	assert.Equal(t, map[string]int64{"transport=file": int64(len(rows)), "transport=http": int64(n)},
		sumByAttrs(t, tt, metadata.MetricRowsAccepted))
	assert.Equal(t, map[string]int64{"transport=http": int64(n)}, sumByAttrs(t, tt, metadata.MetricRowsDuplicate))
	assert.Equal(t, map[string]int64{
		"reason=json_invalid,transport=file": 1,
		"reason=json_invalid,transport=http": 1,
		"reason=content_type,transport=http": 1,
	}, sumByAttrs(t, tt, metadata.MetricRowsRejected))
	read := sumByAttrs(t, tt, metadata.MetricBytesRead)
	assert.Equal(t, int64(2*len(file)+2), read["transport=http"])
	assert.Equal(t, int64(len(lines(append(rows, "{not json")))), read["transport=file"])
	assert.Equal(t, map[string]int64{"": 1}, sumByAttrs(t, tt, metadata.MetricFilesTracked))
	assert.Equal(t, map[string]int64{"": 1}, sumByAttrs(t, tt, metadata.MetricDedupSessions))

	// obsreport, one transport each.
	assert.Equal(t, map[string]int64{"transport=file": int64(len(rows)), "transport=http": int64(n)},
		sumByAttrs(t, tt, "otelcol_receiver_accepted_log_records"))
}
