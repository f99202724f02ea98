package sessionarchive

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/metadata"
)

// NewFactory returns the factory of the session_archive exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig,
		exporter.WithLogs(createLogs, metadata.LogsStability))
}

func createDefaultConfig() component.Config {
	queue := exporterhelper.NewDefaultQueueConfig()
	// Writes are serialized per archive; one consumer keeps the queue's
	// order, so rows seldom arrive early.
	queue.NumConsumers = 1
	return &Config{
		TimeoutConfig:  exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:    configoptional.Some(queue),
		RetryConfig:    configretry.NewDefaultBackOffConfig(),
		Fsync:          defaultFsync,
		Compression:    defaultCompression,
		MaxPendingRows: defaultMaxPendingRows,
		PendingTimeout: defaultPendingTimeout,
		MaxSessions:    defaultMaxSessions,
		MaxOpenFiles:   defaultMaxOpenFiles,
	}
}

func createLogs(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Logs, error) {
	c := cfg.(*Config)
	e, err := newArchiveExporter(c, set)
	if err != nil {
		return nil, err
	}
	return exporterhelper.NewLogs(ctx, set, cfg, e.push,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(c.TimeoutConfig),
		exporterhelper.WithRetry(c.RetryConfig),
		exporterhelper.WithQueue(c.QueueConfig),
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown))
}
