package sessionevent

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource"
)

// Config is the session_event receiver's configuration (docs/design.md §3).
type Config struct {
	// HTTP is the ingest endpoint. Present (even empty) means on.
	HTTP configoptional.Optional[HTTPConfig] `mapstructure:"http"`
	// Files tails dsh session roots. Present (even empty) means on.
	Files configoptional.Optional[FileConfig] `mapstructure:"files"`
	// MaxLineBytes is the longest row accepted, from either source.
	MaxLineBytes int `mapstructure:"max_line_bytes"`
	// KafkaPartitions, when positive, is the partition count of the Kafka
	// topic the records go to: every batch is delivered with the key of
	// its sessions' partition in its client metadata (partitioned).
	KafkaPartitions int `mapstructure:"kafka_partitions"`

	_ struct{}
}

// HTTPConfig is the HTTP source's section: a confighttp server (endpoint,
// tls, auth, cors, max_request_body_size, … at the same level) plus the
// storage for its deduplication state.
type HTTPConfig = httpsource.Config

// FileConfig is the file source's section: the session files to tail,
// where to start, how often to look, and the storage of its checkpoints.
type FileConfig = filesource.Config

// defaultMaxLineBytes is max_line_bytes' default.
const defaultMaxLineBytes = 4 << 20

var _ component.Config = (*Config)(nil)

// Validate checks the configuration as a whole: a source is present, and
// the keys that bind both. Each present section's own keys are its
// Validate's (the collector runs it).
func (c *Config) Validate() error {
	var errs []error
	if !c.HTTP.HasValue() && !c.Files.HasValue() {
		errs = append(errs, errors.New("at least one of \"http\" or \"files\" must be configured"))
	}
	if c.MaxLineBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_line_bytes must be positive, got %d", c.MaxLineBytes))
	}
	if c.KafkaPartitions < 0 || c.KafkaPartitions > maxKafkaPartitions {
		errs = append(errs, fmt.Errorf("kafka_partitions must be between 0 (off) and %d, got %d", maxKafkaPartitions, c.KafkaPartitions))
	}
	if h := c.HTTP.Get(); h != nil {
		if h.ServerConfig.MaxRequestBodySize > 0 && h.ServerConfig.MaxRequestBodySize < int64(c.MaxLineBytes) {
			errs = append(errs, fmt.Errorf("http::max_request_body_size (%d) is below max_line_bytes (%d): a longest row could never be posted",
				h.ServerConfig.MaxRequestBodySize, c.MaxLineBytes))
		}
	}
	return errors.Join(errs...)
}

// httpStorage is the storage extension of the HTTP source's dedup state:
// http::storage, else files::storage.
func (c *Config) httpStorage() *component.ID {
	if h := c.HTTP.Get(); h != nil && h.Storage != nil {
		return h.Storage
	}
	if f := c.Files.Get(); f != nil {
		return f.Storage
	}
	return nil
}
