package turnstate

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
)

// NewFactory returns the factory of the turn_state processor (logs).
func NewFactory() processor.Factory {
	return processor.NewFactory(metadata.Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithLogs(createLogs, metadata.LogsStability))
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	return createLogsWithClock(ctx, set, cfg, next, time.Now)
}

// createLogsWithClock is createLogs with the arrival clock injected (tests).
func createLogsWithClock(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs, clock func() time.Time) (processor.Logs, error) {
	p, err := newStamper(cfg.(*Config), set.TelemetrySettings, clock)
	if err != nil {
		return nil, err
	}
	return processorhelper.NewLogs(ctx, set, cfg, next, p.processLogs,
		processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true}),
		processorhelper.WithShutdown(p.shutdown))
}
