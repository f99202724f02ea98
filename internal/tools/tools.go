//go:build tools

package tools

import (
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	_ "github.com/stretchr/testify/require"
	_ "go.opentelemetry.io/collector/component"
	_ "go.opentelemetry.io/collector/component/componentstatus"
	_ "go.opentelemetry.io/collector/component/componenttest"
	_ "go.opentelemetry.io/collector/config/confighttp"
	_ "go.opentelemetry.io/collector/config/configoptional"
	_ "go.opentelemetry.io/collector/config/configretry"
	_ "go.opentelemetry.io/collector/confmap"
	_ "go.opentelemetry.io/collector/confmap/confmaptest"
	_ "go.opentelemetry.io/collector/connector"
	_ "go.opentelemetry.io/collector/connector/connectortest"
	_ "go.opentelemetry.io/collector/consumer"
	_ "go.opentelemetry.io/collector/consumer/consumererror"
	_ "go.opentelemetry.io/collector/consumer/consumertest"
	_ "go.opentelemetry.io/collector/exporter"
	_ "go.opentelemetry.io/collector/exporter/exporterhelper"
	_ "go.opentelemetry.io/collector/exporter/exportertest"
	_ "go.opentelemetry.io/collector/extension/xextension/storage"
	_ "go.opentelemetry.io/collector/pipeline"
	_ "go.opentelemetry.io/collector/receiver"
	_ "go.opentelemetry.io/collector/receiver/receiverhelper"
	_ "go.opentelemetry.io/collector/receiver/receivertest"
	_ "go.opentelemetry.io/otel/metric"
	_ "go.opentelemetry.io/otel/sdk/metric"
)
