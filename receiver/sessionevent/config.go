package sessionevent

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"

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

	_ struct{}
}

// HTTPConfig is the HTTP source's section: a confighttp server (endpoint,
// tls, auth, cors, max_request_body_size, … at the same level) plus the
// storage for its deduplication state.
type HTTPConfig = httpsource.Config

// FileConfig is the file source.
type FileConfig struct {
	// Include are glob patterns of session files; "**" matches any number
	// of directories, a leading "~" and $DSH_HOME are expanded.
	Include []string `mapstructure:"include"`
	// StartAt applies to the files found at the very first start (no
	// checkpoints yet): "beginning" reads them whole, "end" only what is
	// appended from then on. Files found later are always read whole.
	StartAt string `mapstructure:"start_at"`
	// PollInterval is how often the include patterns are re-globbed and
	// the files checked for growth.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// Storage is a storage extension for the read checkpoints (restart: no
	// loss, no duplicates). Unset: checkpoints live in memory only.
	Storage *component.ID `mapstructure:"storage"`

	_ struct{}
}

// Defaults.
const (
	defaultInclude      = "$DSH_HOME/sessions/**/session*.jsonl*"
	defaultStartAt      = startAtBeginning
	defaultPollInterval = 500 * time.Millisecond
	defaultMaxLineBytes = 4 << 20

	startAtBeginning = "beginning"
	startAtEnd       = "end"
)

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
	if h := c.HTTP.Get(); h != nil {
		if h.ServerConfig.MaxRequestBodySize > 0 && h.ServerConfig.MaxRequestBodySize < int64(c.MaxLineBytes) {
			errs = append(errs, fmt.Errorf("http::max_request_body_size (%d) is below max_line_bytes (%d): a longest row could never be posted",
				h.ServerConfig.MaxRequestBodySize, c.MaxLineBytes))
		}
	}
	if f := c.Files.Get(); f != nil {
		if len(f.Include) == 0 {
			errs = append(errs, errors.New("files::include needs at least one pattern"))
		}
		for _, p := range f.Include {
			if strings.TrimSpace(p) == "" {
				errs = append(errs, errors.New("files::include has an empty pattern"))
			}
		}
		switch f.StartAt {
		case startAtBeginning, startAtEnd:
		default:
			errs = append(errs, fmt.Errorf("files::start_at must be %q or %q, got %q", startAtBeginning, startAtEnd, f.StartAt))
		}
		if f.PollInterval <= 0 {
			errs = append(errs, fmt.Errorf("files::poll_interval must be positive, got %s", f.PollInterval))
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
