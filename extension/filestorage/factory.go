package filestorage

import (
	"context"

	contrib "github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// NewFactory returns the factory of the file_storage extension. Its
// configuration is collector-contrib's file_storage configuration.
func NewFactory() extension.Factory {
	inner := contrib.NewFactory()
	return extension.NewFactory(inner.Type(), inner.CreateDefaultConfig,
		func(ctx context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
			ext, err := inner.Create(ctx, set, cfg)
			if err != nil {
				return nil, err
			}
			return &fileStorage{Extension: ext, inner: ext.(storage.Extension), dir: cfg.(*contrib.Config).Directory, logger: set.Logger}, nil
		}, inner.Stability())
}
