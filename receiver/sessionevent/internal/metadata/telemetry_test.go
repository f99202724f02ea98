package metadata

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestTelemetryMatchesMetadata: every instrument NewTelemetry creates is the
// one metadata.yaml documents (name, description, unit, kind, attributes),
// and metadata.yaml documents no other — the file and the hand-written code
// cannot drift apart unnoticed.
func TestTelemetryMatchesMetadata(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("..", "..", "metadata.yaml"))
	require.NoError(t, err)
	doc := cm.ToStringMap()
	metrics := doc["telemetry"].(map[string]any)["metrics"].(map[string]any)

	tt := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tt.Shutdown(context.Background())) }()
	tel, err := NewTelemetry(tt.NewTelemetrySettings())
	require.NoError(t, err)
	require.NoError(t, tel.ObserveGauges(Gauges{
		FilesTracked:  func() int64 { return 2 },
		DedupSessions: func() int64 { return 3 },
	}))
	defer func() { require.NoError(t, tel.Shutdown()) }()
	ctx := context.Background()
	for _, transport := range []string{TransportHTTP, TransportFile} {
		h := tel.ForTransport(transport)
		h.RowsAccepted(ctx, 1)
		h.RowsDuplicate(ctx, 1)
		h.RowsRejected(ctx, 1, "json_invalid")
		h.BytesRead(ctx, 1)
		h.StateWriteFailed(ctx)
	}

	names := []string{MetricRowsAccepted, MetricRowsDuplicate, MetricRowsRejected, MetricBytesRead,
		MetricStateFailures, MetricFilesTracked, MetricDedupSessions}
	require.Len(t, metrics, len(names), "metadata.yaml documents other metrics than the code creates")
	for _, name := range names {
		spec, ok := metrics[name[len("otelcol_"):]].(map[string]any)
		require.True(t, ok, "%s is not in metadata.yaml", name)
		m, err := tt.GetMetric(name)
		require.NoError(t, err, name)
		assert.Equal(t, spec["description"], m.Description, name)
		assert.Equal(t, spec["unit"], m.Unit, name)

		var want []string
		if a, ok := spec["attributes"].([]any); ok {
			for _, k := range a {
				want = append(want, k.(string))
			}
		}
		var sets []attribute.Set
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			require.Contains(t, spec, "sum", "%s is a sum", name)
			assert.Equal(t, spec["sum"].(map[string]any)["monotonic"], d.IsMonotonic, name)
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		case metricdata.Gauge[int64]:
			require.Contains(t, spec, "gauge", "%s is a gauge", name)
			for _, p := range d.DataPoints {
				sets = append(sets, p.Attributes)
			}
		default:
			t.Fatalf("%s: unexpected %T", name, m.Data)
		}
		require.NotEmpty(t, sets, name)
		for _, s := range sets {
			var got []string
			for _, kv := range s.ToSlice() {
				got = append(got, string(kv.Key))
			}
			slices.Sort(got)
			slices.Sort(want)
			assert.Equal(t, want, got, "%s attributes", name)
		}
	}

	// The transport values are the documented enum.
	attrs := doc["attributes"].(map[string]any)
	assert.Contains(t, attrs, AttributeTransport)
	assert.Contains(t, attrs, AttributeReason)
	assert.Equal(t, []any{TransportHTTP, TransportFile}, attrs[AttributeTransport].(map[string]any)["enum"])
}
