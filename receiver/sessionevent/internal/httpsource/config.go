package httpsource

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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
	// MaxBytesInFlight bounds the decompressed body bytes of all requests
	// being read and judged at once (admission.go); a request that would
	// pass it is answered 503 with Retry-After.
	MaxBytesInFlight int64 `mapstructure:"max_bytes_in_flight"`

	_ struct{}
}

// Read timeouts by default, so that a client trickling its headers or body
// is cut off (a header at the first, 408 at the second) and the admission
// share it holds given back: the longest a well-behaved client needs, not
// confighttp's defaults (a minute for the headers, no bound on the body).
const (
	// DefaultReadHeaderTimeout bounds the time to send the headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the time to send a whole request: a 20 MiB
	// body (max_request_body_size's default) needs about 2.8 Mbit/s.
	DefaultReadTimeout = time.Minute
)

// NewDefaultConfig is the HTTP source's default configuration.
func NewDefaultConfig() Config {
	srv := confighttp.NewDefaultServerConfig()
	srv.NetAddr.Endpoint = DefaultEndpoint
	srv.ReadHeaderTimeout = DefaultReadHeaderTimeout
	srv.ReadTimeout = DefaultReadTimeout
	return Config{ServerConfig: srv, MaxBytesInFlight: DefaultMaxBytesInFlight}
}

// Validate checks the section's own keys; the collector runs it (with
// confighttp's own checks) when the section is present.
func (c *Config) Validate() error {
	if strings.TrimSpace(c.ServerConfig.NetAddr.Endpoint) == "" {
		return errors.New("endpoint must not be empty")
	}
	if c.MaxBytesInFlight <= 0 {
		return fmt.Errorf("max_bytes_in_flight must be positive, got %d", c.MaxBytesInFlight)
	}
	if least := c.leastBytesInFlight(); c.MaxBytesInFlight < least {
		return fmt.Errorf("max_bytes_in_flight (%d) is below %d, what one request of max_request_body_size (%d) takes "+
			"(its decompressed body and its zstd decoder's window): the largest request could never be read",
			c.MaxBytesInFlight, least, c.maxRequestBodySize())
	}
	return nil
}

// defaultMaxRequestBodySize is what confighttp applies when
// max_request_body_size is unset.
const defaultMaxRequestBodySize = 20 << 20

// maxRequestBodySize is the largest decompressed body accepted, confighttp's
// default applied.
func (c *Config) maxRequestBodySize() int64 {
	if c.ServerConfig.MaxRequestBodySize > 0 {
		return c.ServerConfig.MaxRequestBodySize
	}
	return defaultMaxRequestBodySize
}

// zstdEnabled reports whether compression_algorithms lets a body be sent
// with Content-Encoding: zstd (unset: confighttp's defaults, zstd among
// them).
func (c *Config) zstdEnabled() bool {
	return c.ServerConfig.CompressionAlgorithms == nil || slices.Contains(c.ServerConfig.CompressionAlgorithms, "zstd")
}

// leastBytesInFlight is what the largest request takes of
// max_bytes_in_flight: its decompressed body and its zstd decoder's
// largest window (a zstd body is decoded whatever compression_algorithms
// says when it comes without a Content-Encoding).
func (c *Config) leastBytesInFlight() int64 {
	body := c.maxRequestBodySize()
	return body + zstdDecoderBytes(nil, body)
}
