package turnstate

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
)

// NewFactory returns the factory of the turn_state connector: logs (session
// events) in, traces and metrics out.
func NewFactory() connector.Factory {
	return connector.NewFactory(metadata.Type,
		func() component.Config { return createDefaultConfig() },
		connector.WithLogsToTraces(createLogsToTraces, metadata.LogsToTracesStability),
		connector.WithLogsToMetrics(createLogsToMetrics, metadata.LogsToMetricsStability))
}

func createLogsToTraces(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Traces) (connector.Logs, error) {
	return attach(cfg.(*Config), set, next, nil, time.Now)
}

func createLogsToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Logs, error) {
	return attach(cfg.(*Config), set, nil, next, time.Now)
}
