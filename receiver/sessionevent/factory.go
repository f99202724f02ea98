package sessionevent

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

// NewFactory returns the factory of the session_event receiver.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(metadata.Type, createDefaultConfig,
		receiver.WithLogs(createLogs, metadata.LogsStability))
}

func createDefaultConfig() component.Config {
	return &Config{
		HTTP:         configoptional.Default(httpsource.NewDefaultConfig()),
		Files:        configoptional.Default(filesource.NewDefaultConfig()),
		MaxLineBytes: defaultMaxLineBytes,
	}
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	return newReceiver(cfg.(*Config), set, next)
}
