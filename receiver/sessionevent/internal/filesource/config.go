package filesource

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
)

// The values of start_at.
const (
	StartAtBeginning = "beginning"
	StartAtEnd       = "end"
)

// Defaults.
const (
	DefaultInclude      = "$DSH_HOME/sessions/**/session*.jsonl*"
	DefaultStartAt      = StartAtBeginning
	DefaultPollInterval = 500 * time.Millisecond
)

// Config is the file source's section.
type Config struct {
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

// NewDefaultConfig is the file source's default configuration.
func NewDefaultConfig() Config {
	return Config{Include: []string{DefaultInclude}, StartAt: DefaultStartAt, PollInterval: DefaultPollInterval}
}

// Validate checks the section's keys; the collector runs it when the
// section is present.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Include) == 0 {
		errs = append(errs, errors.New("include needs at least one pattern"))
	}
	for _, p := range c.Include {
		if strings.TrimSpace(p) == "" {
			errs = append(errs, errors.New("include has an empty pattern"))
		}
	}
	switch c.StartAt {
	case StartAtBeginning, StartAtEnd:
	default:
		errs = append(errs, fmt.Errorf("start_at must be %q or %q, got %q", StartAtBeginning, StartAtEnd, c.StartAt))
	}
	if c.PollInterval <= 0 {
		errs = append(errs, fmt.Errorf("poll_interval must be positive, got %s", c.PollInterval))
	}
	return errors.Join(errs...)
}
