package turnstate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/xpdata/pref"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

func TestComponentFactoryType(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "turn_state", f.Type().String())
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsToTracesStability())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsToMetricsStability())
	assert.Equal(t, component.StabilityLevelUndefined, f.LogsToLogsStability())
}

func TestComponentConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()))
}

func registered(cfg *Config) bool {
	registryMu.Lock()
	defer registryMu.Unlock()
	_, ok := registry[cfg]
	return ok
}

// The lifecycle test mdatagen would generate, per signal pair: create and
// shut down without Start, then create, Start and Shutdown twice — with the
// same cfg pointer and host each time.
func TestComponentLifecycle(t *testing.T) {
	factory := NewFactory()
	tests := []struct {
		name   string
		create func(ctx context.Context, set connector.Settings, cfg component.Config) (component.Component, error)
	}{
		{
			name: "logs_to_traces",
			create: func(ctx context.Context, set connector.Settings, cfg component.Config) (component.Component, error) {
				router := connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): consumertest.NewNop()})
				return factory.CreateLogsToTraces(ctx, set, cfg, router)
			},
		},
		{
			name: "logs_to_metrics",
			create: func(ctx context.Context, set connector.Settings, cfg component.Config) (component.Component, error) {
				router := connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): consumertest.NewNop()})
				return factory.CreateLogsToMetrics(ctx, set, cfg, router)
			},
		},
	}
	cfg := factory.CreateDefaultConfig()
	for _, tt := range tests {
		t.Run(tt.name+"-shutdown", func(t *testing.T) {
			c, err := tt.create(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg)
			require.NoError(t, err)
			require.NoError(t, c.Shutdown(context.Background()))
		})
		t.Run(tt.name+"-lifecycle", func(t *testing.T) {
			for range 2 {
				c, err := tt.create(context.Background(), connectortest.NewNopSettings(metadata.Type), cfg)
				require.NoError(t, err)
				host := componenttest.NewNopHost()
				require.NoError(t, c.Start(context.Background(), host))
				require.NoError(t, c.Shutdown(context.Background()))
			}
		})
	}
	assert.False(t, registered(cfg.(*Config)))
}

// docs/design.md §9.3: both instances share one core per *Config. Shut
// down without Start, then twice: create both, Start, feed one read-only
// batch to both, Shutdown both. Each event is counted once, the flush
// happens once, and the registry is empty at the end — also when the
// metrics instance is created (and so ingests) first, or is shut down first.
func TestSharedCoreLifecycle(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	host := componenttest.NewNopHost()
	ctx := context.Background()
	path := corpusPath(t, "v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl")
	ld, events := buildRecords(t, path, "s")
	ld.MarkReadOnly()
	replayed, want := replay(t, path, "s")
	require.EqualValues(t, 1, replayed.Stats().Dangling[turnengine.CauseEndOfInput], "the file ends inside a turn")

	create := func(set connector.Settings, traces consumer.Traces, metrics consumer.Metrics, metricsFirst bool) (connector.Logs, connector.Logs) {
		var tr, mt connector.Logs
		var err error
		createTr := func() {
			tr, err = f.CreateLogsToTraces(ctx, set, cfg, connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): traces}))
			require.NoError(t, err)
		}
		createMt := func() {
			mt, err = f.CreateLogsToMetrics(ctx, set, cfg, connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): metrics}))
			require.NoError(t, err)
		}
		if metricsFirst {
			createMt()
			createTr()
		} else {
			createTr()
			createMt()
		}
		return tr, mt
	}

	// Created and shut down without Start (a failed start elsewhere).
	tr, mt := create(connectortest.NewNopSettings(metadata.Type), consumertest.NewNop(), consumertest.NewNop(), false)
	require.True(t, registered(cfg))
	require.NoError(t, tr.Shutdown(ctx))
	require.False(t, registered(cfg), "the first Shutdown unregisters the core even without Start")
	require.NoError(t, mt.Shutdown(ctx))
	require.NoError(t, tr.Start(ctx, host), "a late Start is harmless")

	for round := range 2 {
		tel := componenttest.NewTelemetry()
		set := connectortest.NewNopSettings(metadata.Type)
		set.TelemetrySettings = tel.NewTelemetrySettings()
		traces, metrics := new(consumertest.TracesSink), new(consumertest.MetricsSink)
		metricsFirst := round == 1
		tr, mt := create(set, traces, metrics, metricsFirst)
		require.NoError(t, mt.Start(ctx, host))
		require.NoError(t, tr.Start(ctx, host))
		require.NoError(t, tr.ConsumeLogs(ctx, ld))
		require.NoError(t, mt.ConsumeLogs(ctx, ld))
		first, second := tr, mt
		if metricsFirst {
			first, second = mt, tr
		}
		require.NoError(t, first.Shutdown(ctx))
		require.False(t, registered(cfg))
		require.NoError(t, second.Shutdown(ctx))

		assert.Equal(t, spanCounts(want), spanCounts(merge(traces)), "round %d: every span once", round)
		assert.Len(t, turnSpans(merge(traces)), len(turnSpans(want)), "round %d", round)
		require.Len(t, metrics.AllMetrics(), 1, "round %d: one flush, at shutdown", round)
		assert.EqualValues(t, events, sumTotal(metrics.AllMetrics()[0], turnrender.MetricSessionEvents), "round %d: each event once", round)

		h := &harness{t: t, tel: tel}
		assert.EqualValues(t, 1, h.selfSum(metadata.MetricTurnsDangling, "cause=shutdown"), "round %d", round)
		assert.EqualValues(t, len(turnSpans(want)), h.selfSum(metadata.MetricTurnsClosed), "round %d", round)
		assert.Zero(t, h.selfSum(metadata.MetricEventsDropped, "reason=duplicate"), "round %d: the batch was ingested by one instance only", round)
		require.NoError(t, tel.Shutdown(ctx))
	}
	assert.False(t, registered(cfg))
}

// merge is everything a traces sink received, as one batch.
func merge(sink *consumertest.TracesSink) ptrace.Traces {
	h := &harness{traces: sink}
	return h.allTraces()
}

// A pipeline set-up with only one of the two output signals works: the
// lone instance ingests and emits its signal.
func TestSingleSignal(t *testing.T) {
	f := NewFactory()
	ctx := context.Background()
	ld, _ := buildRecords(t, corpusPath(t, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"), "")
	ld.MarkReadOnly()

	metrics := new(consumertest.MetricsSink)
	mt, err := f.CreateLogsToMetrics(ctx, connectortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(),
		connector.NewMetricsRouter(map[pipeline.ID]consumer.Metrics{pipeline.NewID(pipeline.SignalMetrics): metrics}))
	require.NoError(t, err)
	require.NoError(t, mt.Start(ctx, componenttest.NewNopHost()))
	require.NoError(t, mt.ConsumeLogs(ctx, ld))
	require.NoError(t, mt.Shutdown(ctx))
	require.Len(t, metrics.AllMetrics(), 1)
	assert.Positive(t, sumTotal(metrics.AllMetrics()[0], turnrender.MetricTurns))

	traces := new(consumertest.TracesSink)
	tr, err := f.CreateLogsToTraces(ctx, connectortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(),
		connector.NewTracesRouter(map[pipeline.ID]consumer.Traces{pipeline.NewID(pipeline.SignalTraces): traces}))
	require.NoError(t, err)
	require.NoError(t, tr.Start(ctx, componenttest.NewNopHost()))
	require.NoError(t, tr.ConsumeLogs(ctx, ld))
	require.NoError(t, tr.Shutdown(ctx))
	assert.Positive(t, traces.SpanCount())
}

// TestRefusesProtoPooling: under the collector's pdata.useProtoPooling
// gate the connector does not start, and says why (README: with the gate,
// the pipelines it takes part in lose data past their first consumer).
func TestRefusesProtoPooling(t *testing.T) {
	require.NoError(t, featuregate.GlobalRegistry().Set(pref.UseProtoPooling.ID(), true))
	t.Cleanup(func() { require.NoError(t, featuregate.GlobalRegistry().Set(pref.UseProtoPooling.ID(), false)) })
	h := newHarness(t, createDefaultConfig(), nil, nil)
	err := h.toTr.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "pdata.useProtoPooling")
	require.ErrorIs(t, h.toMt.Start(context.Background(), componenttest.NewNopHost()), err)
	require.NoError(t, h.toTr.Shutdown(context.Background()))
	require.NoError(t, h.toMt.Shutdown(context.Background()))
}
