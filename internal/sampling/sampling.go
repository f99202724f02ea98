// Package sampling decides which closed turns keep their spans: every turn
// that went wrong, and every turn of a share of the sessions, chosen by a
// hash of the session id (docs/design.md §12). The decision is pure: the
// same session gets the same decision on every instance, after a restart
// and on a replay, so a kept session is whole.
//
// It speaks the OpenTelemetry consistent probability sampling tracestate:
// a session's randomness is 56 bits of its id's hash (rv), a session is
// kept when its randomness is at least the rejection threshold of the
// ratio (th), and kept spans carry both (`ot=th:…;rv:…`), or `th:0` when
// they were kept for what went wrong, whatever the ratio.
package sampling

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// Config is the sampling's configuration (turn_state::sampling).
type Config struct {
	// SessionRatio is the share of sessions whose every turn is kept
	// (0 to 1; 1, the default, keeps everything).
	SessionRatio float64 `mapstructure:"session_ratio"`
	// KeepOver keeps every turn over any of its limits (0: off).
	KeepOver Limits `mapstructure:"keep_over"`
	// MaxHeldSpans bounds the spans of live steps held back for the open
	// turns of sessions not kept, until each turn's end decides.
	MaxHeldSpans int `mapstructure:"max_held_spans"`
}

// Limits keep the turns over them: cost in USD, tokens (input, output,
// cache reads and writes, reasoning), duration and steps; 0 is off.
type Limits struct {
	Cost     float64       `mapstructure:"cost"`
	Tokens   int64         `mapstructure:"tokens"`
	Duration time.Duration `mapstructure:"duration"`
	Steps    int           `mapstructure:"steps"`
}

// DefaultMaxHeldSpans is MaxHeldSpans's default.
const DefaultMaxHeldSpans = 50000

// Defaults keep everything.
func Defaults() Config { return Config{SessionRatio: 1, MaxHeldSpans: DefaultMaxHeldSpans} }

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	if math.IsNaN(c.SessionRatio) || c.SessionRatio < 0 || c.SessionRatio > 1 {
		errs = append(errs, fmt.Errorf("sampling::session_ratio must be between 0 and 1, got %v", c.SessionRatio))
	}
	if c.MaxHeldSpans <= 0 {
		errs = append(errs, fmt.Errorf("sampling::max_held_spans must be positive, got %d", c.MaxHeldSpans))
	}
	k := c.KeepOver
	if k.Cost < 0 || math.IsNaN(k.Cost) || k.Tokens < 0 || k.Duration < 0 || k.Steps < 0 {
		errs = append(errs, errors.New("sampling::keep_over: cost, tokens, duration and steps must not be negative (0: off)"))
	}
	return errors.Join(errs...)
}

// On reports whether anything may be dropped: a ratio below 1.
func (c Config) On() bool { return c.SessionRatio < 1 }

// Why a turn was kept or dropped: the reason attribute of the counters.
const (
	// Outcome: the turn did not end completed or forked (an error,
	// max-tokens, aborted, blocked, interrupted; dangling; closed late).
	Outcome = "outcome"
	// Finding: the turn has a finding.
	Finding = "finding"
	// KeepOver: the turn is over a keep_over limit.
	KeepOver = "keep_over"
	// Session: the turn's session is among the share kept.
	Session = "session"
	// Ratio: dropped, its session not among the share kept.
	Ratio = "ratio"
)

// Reasons are the reasons, the kept ones first.
var Reasons = []string{Outcome, Finding, KeepOver, Session, Ratio}

// Sampler decides with one configuration.
type Sampler struct {
	cfg Config
	// threshold is the ratio's rejection threshold in 56 bits: a session
	// is kept when its randomness is at least threshold.
	threshold uint64
	th        string // its tracestate encoding
}

// maxRandomness is 2^56, one past the largest 56-bit randomness.
const maxRandomness = uint64(1) << 56

// New returns the sampler of cfg (validated).
func New(cfg Config) *Sampler {
	s := &Sampler{cfg: cfg}
	s.threshold = Threshold(cfg.SessionRatio)
	s.th = encodeThreshold(s.threshold)
	return s
}

// Config is the sampler's configuration.
func (s *Sampler) Config() Config { return s.cfg }

// Threshold is the rejection threshold of probability p, (1-p)·2^56
// rounded: 0 keeps everything, 2^56 nothing.
func Threshold(p float64) uint64 {
	switch {
	case p >= 1:
		return 0
	case p <= 0:
		return maxRandomness
	}
	return uint64(math.Round((1 - p) * float64(maxRandomness)))
}

// Randomness is a session's 56 bits of randomness: the first 7 bytes of
// the SHA-256 of its id (the connector's session key, client included).
func Randomness(session string) uint64 {
	sum := sha256.Sum256([]byte(session))
	return binary.BigEndian.Uint64(sum[:8]) >> 8
}

// SessionKept reports whether the session is among the share kept.
func (s *Sampler) SessionKept(session string) bool {
	return s.threshold == 0 || Randomness(session) >= s.threshold
}

// Decision is what the sampler decided for one closed turn.
type Decision struct {
	Keep bool
	// Reason is why (one of Reasons): the first that applies of outcome,
	// finding, keep_over and session, or ratio for a dropped turn.
	Reason string
}

// Decide decides for a closed turn (not a live step fragment). A late
// close is always kept: its turn was kept as dangling.
func (s *Sampler) Decide(t *turnengine.Turn) Decision {
	switch {
	case t.Late != nil || t.Dangling():
		return Decision{Keep: true, Reason: Outcome}
	case t.Reason.Kind != "completed" && t.Reason.Kind != "forked":
		return Decision{Keep: true, Reason: Outcome}
	case len(t.Findings) > 0:
		return Decision{Keep: true, Reason: Finding}
	case s.over(t):
		return Decision{Keep: true, Reason: KeepOver}
	case s.SessionKept(t.SessionID):
		return Decision{Keep: true, Reason: Session}
	}
	return Decision{Keep: false, Reason: Ratio}
}

func (s *Sampler) over(t *turnengine.Turn) bool {
	k := s.cfg.KeepOver
	if k == (Limits{}) {
		return false
	}
	tot := t.Totals()
	return k.Steps > 0 && tot.Steps > k.Steps ||
		k.Tokens > 0 && tot.Tokens > k.Tokens ||
		k.Cost > 0 && tot.Cost > k.Cost ||
		k.Duration > 0 && tot.Duration > k.Duration
}

// TraceState is the tracestate of the spans of a session kept by the
// ratio: the ratio's threshold and the session's randomness. Empty when
// the ratio keeps everything (no sampling to speak of).
func (s *Sampler) TraceState(session string) string {
	if s.threshold == 0 {
		return ""
	}
	return "ot=th:" + s.th + ";rv:" + fmt.Sprintf("%014x", Randomness(session))
}

// Always is the tracestate of spans kept whatever the ratio (a turn that
// went wrong): probability 1. Empty when the ratio keeps everything.
func (s *Sampler) Always() string {
	if s.threshold == 0 {
		return ""
	}
	return "ot=th:0"
}

// encodeThreshold writes a threshold as the spec's th value: 14
// hexadecimal digits, trailing zeros removed ("0" for zero).
func encodeThreshold(t uint64) string {
	switch {
	case t == 0:
		return "0"
	case t >= maxRandomness:
		return "" // keeps nothing: no span carries it
	}
	h := strconv.FormatUint(t, 16)
	h = strings.Repeat("0", 14-len(h)) + h
	return strings.TrimRight(h, "0")
}

// ParseThreshold reads a th value back (for tests and tools).
func ParseThreshold(th string) (uint64, error) {
	if th == "" || len(th) > 14 {
		return 0, fmt.Errorf("th %q: want 1 to 14 hexadecimal digits", th)
	}
	v, err := strconv.ParseUint(th+strings.Repeat("0", 14-len(th)), 16, 64)
	if err != nil {
		return 0, fmt.Errorf("th %q: %w", th, err)
	}
	return v, nil
}
