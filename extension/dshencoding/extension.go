package dshencoding

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/plog"
)

// typ is the extension's component type.
var typ = component.MustNewType("dsh_encoding")

// Config of the dsh_encoding extension: nothing to set.
type Config struct {
	_ struct{}
}

// NewFactory returns the factory of the dsh_encoding extension.
func NewFactory() extension.Factory {
	return extension.NewFactory(typ, func() component.Config { return &Config{} },
		func(context.Context, extension.Settings, component.Config) (extension.Extension, error) {
			return &Encoding{}, nil
		}, component.StabilityLevelDevelopment)
}

// Encoding marshals and unmarshals logs (plog.Marshaler, plog.Unmarshaler),
// which is what the kafka exporter and receiver look an encoding
// extension up by.
type Encoding struct{}

var (
	_ plog.Marshaler   = (*Encoding)(nil)
	_ plog.Unmarshaler = (*Encoding)(nil)
)

// Start does nothing.
func (*Encoding) Start(context.Context, component.Host) error { return nil }

// Shutdown does nothing.
func (*Encoding) Shutdown(context.Context) error { return nil }

// MarshalLogs writes ld compactly (or as OTLP protobuf: package doc).
func (*Encoding) MarshalLogs(ld plog.Logs) ([]byte, error) { return marshal(ld) }

// UnmarshalLogs reads a compact or an OTLP protobuf message.
func (*Encoding) UnmarshalLogs(b []byte) (plog.Logs, error) { return unmarshal(b) }
