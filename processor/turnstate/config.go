package turnstate

import (
	"errors"
	"fmt"
	"time"

	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Config configures the turn_state processor. Its keys are the
// turn_state connector's session bounds, defaulted from the one
// declaration both share (turnmodel.Bounds): at the defaults the two
// close and forget the same turns and sessions, and so place the same
// events. Set them only to follow a connector whose bounds were changed.
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

func createDefaultConfig() *Config {
	return &Config{
		MaxSessions:     turnmodel.DefaultMaxSessions,
		MaxOpenTurns:    turnmodel.DefaultMaxOpenTurns,
		DanglingTimeout: turnmodel.DefaultDanglingTimeout,
	}
}

// bounds are the configured bounds in the turn model's terms.
func (c *Config) bounds() turnmodel.Bounds {
	return turnmodel.Bounds{MaxSessions: c.MaxSessions, MaxOpenTurns: c.MaxOpenTurns, DanglingTimeout: c.DanglingTimeout}
}

// Validate checks the configuration: every bound must be positive.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxSessions <= 0 {
		errs = append(errs, fmt.Errorf("max_sessions must be positive, got %d (it bounds the sessions whose position is kept; the default, shared with the turn_state connector, is %d)",
			c.MaxSessions, turnmodel.DefaultMaxSessions))
	}
	if c.MaxOpenTurns <= 0 {
		errs = append(errs, fmt.Errorf("max_open_turns must be positive, got %d (it bounds the open turns; the default, shared with the turn_state connector, is %d)",
			c.MaxOpenTurns, turnmodel.DefaultMaxOpenTurns))
	}
	if c.DanglingTimeout <= 0 {
		errs = append(errs, fmt.Errorf("dangling_timeout must be a positive duration, got %v (the silence after which an open turn is closed; the default, shared with the turn_state connector, is %v)",
			c.DanglingTimeout, turnmodel.DefaultDanglingTimeout))
	}
	return errors.Join(errs...)
}
