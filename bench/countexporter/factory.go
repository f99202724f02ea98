package countexporter

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
)

// Type is the exporter's component type.
var Type = component.MustNewType("count")

const stability = component.StabilityLevelDevelopment

// NewFactory returns the factory of the count exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(Type, createDefaultConfig,
		exporter.WithLogs(createLogs, stability),
		exporter.WithTraces(createTraces, stability),
		exporter.WithMetrics(createMetrics, stability))
}

func createDefaultConfig() component.Config {
	return &Config{Interval: defaultInterval}
}

func createLogs(_ context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	return newExporter(set, cfg.(*Config)), nil
}

func createTraces(_ context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	return newExporter(set, cfg.(*Config)), nil
}

func createMetrics(_ context.Context, set exporter.Settings, cfg component.Config) (exporter.Metrics, error) {
	return newExporter(set, cfg.(*Config)), nil
}
