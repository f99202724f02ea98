package turnstate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
)

func TestComponentFactoryType(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, "turn_state", f.Type().String())
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, component.StabilityLevelDevelopment, f.LogsStability())
	assert.Equal(t, component.StabilityLevelUndefined, f.TracesStability())
	assert.Equal(t, component.StabilityLevelUndefined, f.MetricsStability())
}

func TestComponentConfigStruct(t *testing.T) {
	require.NoError(t, componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()))
}

// The lifecycle test mdatagen would generate: create and shut down without
// Start; create, Start, consume and Shutdown twice with the same config.
func TestComponentLifecycle(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig()
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	require.NoError(t, p.Shutdown(context.Background()))
	for range 2 {
		p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
		require.NoError(t, err)
		require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, p.ConsumeLogs(context.Background(), plog.NewLogs()))
		assert.True(t, p.Capabilities().MutatesData)
		require.NoError(t, p.Shutdown(context.Background()))
	}
}

func TestComponentTracesAndMetricsUnsupported(t *testing.T) {
	f := NewFactory()
	_, err := f.CreateTraces(context.Background(), processortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), consumertest.NewNop())
	require.Error(t, err)
	_, err = f.CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), f.CreateDefaultConfig(), consumertest.NewNop())
	require.Error(t, err)
}
