package turnstate

import (
	"errors"
	"fmt"
	"time"

	"github.com/dshtrace/dshtrace/internal/sessiontable"
)

// Config configures the turn_state processor. Its bounds are the turn_state
// connector's, with the same defaults, so that both close and forget the
// same turns and sessions and so place the same events.
type Config struct {
	// MaxSessions bounds the sessions whose position is kept; the least
	// recently active is forgotten.
	MaxSessions int `mapstructure:"max_sessions"`
	// MaxOpenTurns bounds the open turns; at the bound the oldest is
	// closed (its later events are late, as in the connector).
	MaxOpenTurns int `mapstructure:"max_open_turns"`
	// DanglingTimeout is the silence, measured on arrival time, after which
	// a session's open turn is closed (the connector closes it as dangling).
	DanglingTimeout time.Duration `mapstructure:"dangling_timeout"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Defaults: the bounds every part shares (internal/sessiontable), so the
// processor closes the turns the connector closes.
const (
	defaultMaxSessions     = sessiontable.DefaultMaxSessions
	defaultMaxOpenTurns    = sessiontable.DefaultMaxOpenTurns
	defaultDanglingTimeout = sessiontable.DefaultDanglingTimeout
)

func createDefaultConfig() *Config {
	return &Config{
		MaxSessions:     defaultMaxSessions,
		MaxOpenTurns:    defaultMaxOpenTurns,
		DanglingTimeout: defaultDanglingTimeout,
	}
}

// Validate checks the configuration: every bound must be positive.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxSessions <= 0 {
		errs = append(errs, fmt.Errorf("max_sessions must be positive, got %d (it bounds the sessions whose position is kept; the connector's default is %d)", c.MaxSessions, defaultMaxSessions))
	}
	if c.MaxOpenTurns <= 0 {
		errs = append(errs, fmt.Errorf("max_open_turns must be positive, got %d (set it to the turn_state connector's value)", c.MaxOpenTurns))
	}
	if c.DanglingTimeout <= 0 {
		errs = append(errs, fmt.Errorf("dangling_timeout must be a positive duration, got %v (set it to the turn_state connector's value)", c.DanglingTimeout))
	}
	return errors.Join(errs...)
}
