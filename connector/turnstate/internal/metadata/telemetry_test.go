package metadata

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Every instrument NewTelemetry creates is documented in metadata.yaml's
// telemetry section, with the same unit, description and kind, and every
// one documented there is created.
func TestTelemetryMatchesMetadataYAML(t *testing.T) {
	conf, err := confmaptest.LoadConf("../../metadata.yaml")
	require.NoError(t, err)
	sub, err := conf.Sub("telemetry::metrics")
	require.NoError(t, err)
	documented := sub.ToStringMap()
	require.NotEmpty(t, documented)

	tel := componenttest.NewTelemetry()
	defer func() { require.NoError(t, tel.Shutdown(context.Background())) }()
	tt, err := NewTelemetry(tel.NewTelemetrySettings(), Gauges{
		TurnsOpen:    func() int64 { return 3 },
		SessionsOpen: func() int64 { return 2 },
		JournalLag:   func() int64 { return 1 },
		TurnsHeld:    func() int64 { return 4 },
		View:         func() (int64, int64, int64, bool) { return 5, 6, 7, true },
		HeldSpans:    func() int64 { return 8 },
	})
	require.NoError(t, err)
	ctx := context.Background()
	tt.TurnsClosed.Add(ctx, 1)
	tt.LateEvents.Add(ctx, 1)
	tt.TurnsClosedLate.Add(ctx, 1)
	tt.GapsSkipped.Add(ctx, 1)
	tt.ReorderOverflows.Add(ctx, 1)
	tt.JournalFailures.Add(ctx, 1)
	tt.TurnsLost.Add(ctx, 1)
	tt.JournalDamaged.Add(ctx, 1)
	tt.JournalRestored.Add(ctx, 1)
	tt.Redelivered.Add(ctx, 1)
	tt.SessionsRestored.Add(ctx, 1)
	tt.RestoreFailures.Add(ctx, 1)
	tt.TurnsHandedOver.Add(ctx, 1)
	tt.ViewSyncs.Add(ctx, 1)
	tt.ChangelogRecords.Add(ctx, 1)
	tt.ChangelogBytes.Add(ctx, 1)
	tt.ChangelogLost.Add(ctx, 1)
	tt.RestoreDuration.Record(ctx, 0.01)
	tt.AddDangling(ctx, "timeout", 2)
	tt.AddDropped(ctx, ReasonOrphan, 4)
	tt.AddEmitFailure(ctx, SignalMetrics)
	tt.AddSampled(ctx, false, "ratio")
	tt.AddHeldDropped(ctx, 3)

	var created []string
	for _, name := range []string{
		MetricTurnsOpen, MetricSessionsOpen, MetricTurnsClosed, MetricTurnsDangling, MetricLateEvents, MetricTurnsClosedLate,
		MetricEventsDropped, MetricGapsSkipped, MetricReorderOverflows, MetricEmitFailures, MetricJournalFailures,
		MetricJournalLag, MetricJournalRestored, MetricRedelivered, MetricSessionsRestored, MetricRestoreFailures,
		MetricTurnsHandedOver, MetricRestoreDuration, MetricTurnsHeld, MetricTurnsLost, MetricJournalDamaged, MetricViewSyncs,
		MetricChangelogRecords, MetricChangelogBytes, MetricChangelogLost, MetricViewSessions, MetricViewBytes, MetricViewPartitions,
		MetricTurnsSampled, MetricHeldDropped, MetricHeldSpans,
	} {
		m, err := tel.GetMetric(name)
		require.NoError(t, err, name)
		created = append(created, name)
		doc, ok := documented[name[len("otelcol_"):]].(map[string]any)
		require.True(t, ok, "%s is not documented in metadata.yaml", name)
		assert.Equal(t, doc["unit"], m.Unit, name)
		assert.Equal(t, doc["description"], m.Description, name)
		switch m.Data.(type) {
		case metricdata.Sum[int64]:
			assert.Contains(t, doc, "sum", "%s is a counter", name)
		case metricdata.Gauge[int64]:
			assert.Contains(t, doc, "gauge", "%s is a gauge", name)
		case metricdata.Histogram[float64]:
			assert.Contains(t, doc, "histogram", "%s is a histogram", name)
		default:
			t.Errorf("%s: unexpected data %T", name, m.Data)
		}
	}
	var want []string
	for key := range documented {
		want = append(want, "otelcol_"+key)
	}
	sort.Strings(want)
	sort.Strings(created)
	assert.Equal(t, want, created)

	g, err := tel.GetMetric(MetricTurnsOpen)
	require.NoError(t, err)
	assert.EqualValues(t, 3, g.Data.(metricdata.Gauge[int64]).DataPoints[0].Value)
	g, err = tel.GetMetric(MetricViewPartitions)
	require.NoError(t, err)
	assert.EqualValues(t, 7, g.Data.(metricdata.Gauge[int64]).DataPoints[0].Value)

	require.NoError(t, tt.Shutdown())
	require.NoError(t, tt.Shutdown(), "a second Shutdown is a no-op")
	_, err = tel.GetMetric(MetricTurnsOpen)
	assert.Error(t, err, "the gauges' callback is unregistered")
}
