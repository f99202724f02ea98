package countexporter

import (
	"errors"
	"time"
)

// Config of the count exporter.
type Config struct {
	// StatusFile, when set, receives the counts as a JSON Status object.
	StatusFile string `mapstructure:"status_file"`
	// Interval is the shortest time between two writes of StatusFile.
	Interval time.Duration `mapstructure:"interval"`

	_ struct{}
}

const defaultInterval = 100 * time.Millisecond

// Validate checks the interval.
func (c *Config) Validate() error {
	if c.Interval <= 0 {
		return errors.New("interval must be positive")
	}
	return nil
}
