// Package episode logs a condition that repeats — a storage write that
// fails, a pipeline that refuses — once when it begins and once when it
// ends, instead of once per row, file or request: one clear line per
// cause, with how long it lasted and how often it struck. Every strike is
// still counted by the caller's self-metric.
package episode

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// An Episode is one condition of one component. It is safe for concurrent
// use; the zero Episode is not: use New.
type Episode struct {
	logger     *zap.Logger
	begin, end string

	mu      sync.Mutex
	active  bool
	since   time.Time
	strikes int
	clock   func() time.Time
}

// New returns an episode that logs begin (at error level) when the
// condition first strikes and end (at info level) when it clears.
func New(logger *zap.Logger, begin, end string) *Episode {
	return &Episode{logger: logger, begin: begin, end: end, clock: time.Now}
}

// Strike records the condition; the first strike of an episode is logged
// with err and fields. It reports whether this strike began the episode.
func (e *Episode) Strike(err error, fields ...zap.Field) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.strikes++
	if e.active {
		return false
	}
	e.active, e.since = true, e.clock()
	e.logger.Error(e.begin, append(fields, zap.Error(err))...)
	return true
}

// Clear ends the episode, if one is under way, and logs its end with how
// long it lasted and how often it struck.
func (e *Episode) Clear() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.active {
		return
	}
	e.logger.Info(e.end, zap.Duration("lasted", e.clock().Sub(e.since).Round(time.Millisecond)), zap.Int("strikes", e.strikes))
	e.active, e.strikes = false, 0
}

// Active reports whether an episode is under way.
func (e *Episode) Active() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active
}
