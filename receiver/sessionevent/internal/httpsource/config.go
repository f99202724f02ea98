package httpsource

import (
	"errors"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
)

// DefaultEndpoint is the address served on by default.
const DefaultEndpoint = "localhost:4320"

// Config is the HTTP source: a confighttp server (endpoint, tls, auth,
// cors, max_request_body_size, … at the same level) plus the storage for its
// deduplication state.
type Config struct {
	ServerConfig confighttp.ServerConfig `mapstructure:",squash"`
	// Storage is a storage extension keeping which rows were accepted, so a
	// restart does not emit re-posted rows again. Unset: files::storage when
	// that is set, else memory only.
	Storage *component.ID `mapstructure:"storage"`

	_ struct{}
}

// NewDefaultConfig is the HTTP source's default configuration.
func NewDefaultConfig() Config {
	srv := confighttp.NewDefaultServerConfig()
	srv.NetAddr.Endpoint = DefaultEndpoint
	return Config{ServerConfig: srv}
}

// Validate checks the section's own keys; the collector runs it (with
// confighttp's own checks) when the section is present.
func (c *Config) Validate() error {
	if strings.TrimSpace(c.ServerConfig.NetAddr.Endpoint) == "" {
		return errors.New("endpoint must not be empty")
	}
	return nil
}
