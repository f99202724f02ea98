package turnstate

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog"
	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/pricing"
	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Config configures the turn_state connector (docs/design.md §4, README).
type Config struct {
	// AgentName names the agent in turn spans (`invoke_agent {agent}`) when
	// a session's header has no agentPreset.
	AgentName string `mapstructure:"agent_name"`
	// DanglingTimeout is the silence, measured on arrival time, after which
	// an open turn is closed as dangling with cause "timeout".
	DanglingTimeout time.Duration `mapstructure:"dangling_timeout"`
	// MaxOpenTurns bounds the open turns; at the bound the oldest is closed
	// as dangling with cause "evicted".
	MaxOpenTurns int `mapstructure:"max_open_turns"`
	// MaxSessions bounds the sessions remembered; the least recently active
	// is forgotten (its open turn closed as dangling, cause "evicted").
	MaxSessions int `mapstructure:"max_sessions"`
	// MetricsFlushInterval is how often the cumulative metrics are emitted
	// (and once more at shutdown).
	MetricsFlushInterval time.Duration `mapstructure:"metrics_flush_interval"`
	// CaptureContent puts prompts, model output and tool payloads on spans.
	// Off by default: they are personal data.
	CaptureContent bool `mapstructure:"capture_content"`
	// MaxContentBytes truncates each captured content attribute, keeping it
	// valid JSON.
	MaxContentBytes int `mapstructure:"max_content_bytes"`
	// MaxAttributeValues caps the distinct model, tool and event-type values
	// in metrics; the rest are reported as "other".
	MaxAttributeValues int `mapstructure:"max_attribute_values"`
	// GapTimeout is how long a session waits (arrival time) for a missing
	// seq before it gives up on it and carries on.
	GapTimeout time.Duration `mapstructure:"gap_timeout"`
	// ReorderWindow bounds the events held per session while a missing seq
	// is awaited; beyond it the gap is skipped at once.
	ReorderWindow int `mapstructure:"reorder_window"`
	// LiveSteps emits each step's spans (step, model calls, tool calls) as
	// soon as the step ends, and the turn's root span at its end: a
	// running turn's finished steps are visible within a batch. Off, a
	// turn's spans go out together at its end.
	LiveSteps bool `mapstructure:"live_steps"`
	// Storage is a storage extension (file_storage) in which the state of
	// every session is journaled, so that turns open when the collector
	// stops — crash included — carry on after the restart. Unset: open
	// turns are closed as dangling (cause shutdown) at a clean stop and
	// lost at a crash.
	Storage *component.ID `mapstructure:"storage"`
	// Changelog keeps the journal in a compacted Kafka topic instead of a
	// storage extension, shared by every instance of a consumer group:
	// the instance a partition moves to carries its sessions' open turns
	// on (README "Scaling out"). Exclusive with Storage.
	Changelog *ChangelogConfig `mapstructure:"changelog"`
	// Prices prices model calls (USD per million tokens, by provider and
	// model, optionally by date range): the cost on chat and turn spans and
	// the dsh.usage.cost counter. They come before the built-in prices of
	// DeepSeek's official models: a model priced here is priced by these
	// entries alone. A model priced nowhere has no cost.
	Prices []PriceConfig `mapstructure:"prices"`
	// BuiltinPrices keeps the built-in DeepSeek prices (default true).
	BuiltinPrices bool `mapstructure:"builtin_prices"`
	// TurnsByClient counts dsh.turns by the client that wrote each turn's
	// session too (enduser.id): off by default, as every client adds
	// series (capped at max_attribute_values).
	TurnsByClient bool `mapstructure:"turns_by_client"`
	// Findings are the thresholds of what went wrong in a turn
	// (internal/findings): loop_repeats, error_streak, and the budgets
	// max_steps, max_tokens, max_cost, max_duration (0: off).
	Findings findings.Config `mapstructure:"findings"`
	// Sampling keeps every turn that went wrong and every turn of a share
	// of the sessions (internal/sampling): session_ratio, keep_over,
	// max_held_spans. The default keeps everything.
	Sampling sampling.Config `mapstructure:"sampling"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ChangelogConfig is the journal's Kafka changelog topic.
type ChangelogConfig struct {
	// Brokers are the seed brokers (host:port).
	Brokers []string `mapstructure:"brokers"`
	// Topic is the changelog topic, created compacted if absent.
	Topic string `mapstructure:"topic"`
	// Owner names this instance in the records it writes (with a nonce
	// per start): a stable name per instance, such as the pod's. At start
	// the instance resumes the sessions an earlier start of the same owner
	// wrote last.
	Owner string `mapstructure:"owner"`
	// Partitions and ReplicationFactor apply when the connector creates
	// the topic (-1: the broker's defaults). Never add partitions to an
	// existing changelog: a session's keys would then hash elsewhere.
	Partitions        int32 `mapstructure:"partitions"`
	ReplicationFactor int16 `mapstructure:"replication_factor"`
	// MaxRecordBytes bounds one record: a session's records of one batch
	// are one record. At least the largest Kafka message the logs come in.
	MaxRecordBytes int32 `mapstructure:"max_record_bytes"`
	// Timeout bounds each write and each read up to the topic's end; past
	// it the batch is refused, and its sender retries it.
	Timeout time.Duration `mapstructure:"timeout"`
	// Compression is the codec of the records written: none, gzip,
	// snappy, lz4 (the default) or zstd. Every instance reads any.
	Compression string `mapstructure:"compression"`
	// TLS, when set, encrypts the connections to the brokers (the same
	// settings as the kafka receiver's tls section: ca_file, cert_file,
	// key_file, insecure_skip_verify, …).
	TLS *configtls.ClientConfig `mapstructure:"tls"`
	// Auth, when set, authenticates with SASL.
	Auth *ChangelogAuth `mapstructure:"auth"`
	// ConsumerGroup is the kafka receiver's group_id. With it, and the
	// receiver's group_instance_id equal to Owner, a turn is closed as
	// dangling only while the group coordinator lists its session's
	// partition as this instance's: an old owner never closes a turn its
	// partition's new owner carries on.
	ConsumerGroup string `mapstructure:"consumer_group"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ChangelogAuth is the changelog client's SASL authentication.
type ChangelogAuth struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string              `mapstructure:"mechanism"`
	Username  string              `mapstructure:"username"`
	Password  configopaque.String `mapstructure:"password"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// mechanism is the franz-go SASL mechanism of the settings.
func (a *ChangelogAuth) mechanism() (sasl.Mechanism, error) {
	switch a.Mechanism {
	case "PLAIN":
		return plain.Auth{User: a.Username, Pass: string(a.Password)}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: a.Username, Pass: string(a.Password)}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: a.Username, Pass: string(a.Password)}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("changelog::auth::mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", a.Mechanism)
}

// Changelog defaults, applied to a changelog section's unset fields.
const (
	defaultChangelogTopic      = "dsh-turn-state-changelog"
	defaultChangelogPartitions = 12
	defaultChangelogMaxRecord  = 8 << 20
	defaultChangelogTimeout    = 10 * time.Second
)

func (c ChangelogConfig) withDefaults() ChangelogConfig {
	if c.Topic == "" {
		c.Topic = defaultChangelogTopic
	}
	if c.Partitions == 0 {
		c.Partitions = defaultChangelogPartitions
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.MaxRecordBytes == 0 {
		c.MaxRecordBytes = defaultChangelogMaxRecord
	}
	if c.Timeout == 0 {
		c.Timeout = defaultChangelogTimeout
	}
	if c.Compression == "" {
		c.Compression = "lz4"
	}
	return c
}

func (c ChangelogConfig) validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("changelog::brokers must name at least one broker"))
	}
	if c.Owner == "" {
		errs = append(errs, errors.New("changelog::owner must not be empty (a stable name per instance, e.g. ${env:HOSTNAME})"))
	}
	if strings.Contains(c.Owner, "/") {
		errs = append(errs, fmt.Errorf("changelog::owner %q must not contain '/'", c.Owner))
	}
	if _, err := changelog.Codec(c.Compression); err != nil {
		errs = append(errs, fmt.Errorf("changelog::%w", err))
	}
	if c.Auth != nil {
		if _, err := c.Auth.mechanism(); err != nil {
			errs = append(errs, err)
		}
		if c.Auth.Username == "" {
			errs = append(errs, errors.New("changelog::auth::username must not be empty"))
		}
	}
	if c.TLS != nil {
		if err := c.TLS.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("changelog::tls: %w", err))
		}
	}
	if c.Partitions < -1 || c.ReplicationFactor < -1 || c.MaxRecordBytes < 0 || c.Timeout < 0 {
		errs = append(errs, errors.New("changelog: partitions, replication_factor, max_record_bytes and timeout must not be negative (-1: the broker's default partitions and replication)"))
	}
	return errors.Join(errs...)
}

// PriceConfig is one entry of the price table: a provider's model, its
// prices in USD per million tokens, and optionally the time range
// [from, until) it applies to, matched against a turn's start (event
// time). Input and output are required; cache_read and cache_write, when
// left out, cost the input price (a provider without a cache discount).
type PriceConfig struct {
	Provider   string   `mapstructure:"provider"`
	Model      string   `mapstructure:"model"`
	Input      *float64 `mapstructure:"input"`
	CacheRead  *float64 `mapstructure:"cache_read"`
	CacheWrite *float64 `mapstructure:"cache_write"`
	Output     *float64 `mapstructure:"output"`
	// From and Until are YAML timestamps: dates (2006-01-02, UTC midnight)
	// or RFC 3339 times.
	From  time.Time `mapstructure:"from"`
	Until time.Time `mapstructure:"until"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Default metrics flush interval; the session bounds default to
// turnmodel's, the engine owns the other defaults.
const defaultMetricsFlushInterval = 15 * time.Second

func createDefaultConfig() *Config {
	return &Config{
		AgentName:            turnengine.DefaultAgentName,
		DanglingTimeout:      turnmodel.DefaultDanglingTimeout,
		MaxOpenTurns:         turnmodel.DefaultMaxOpenTurns,
		MaxSessions:          turnmodel.DefaultMaxSessions,
		MetricsFlushInterval: defaultMetricsFlushInterval,
		CaptureContent:       false,
		LiveSteps:            true,
		MaxContentBytes:      turnengine.DefaultMaxContentBytes,
		MaxAttributeValues:   turnrender.DefaultMaxAttributeValues,
		GapTimeout:           turnengine.DefaultGapTimeout,
		ReorderWindow:        turnengine.DefaultReorderWindow,
		BuiltinPrices:        true,
		Findings:             findings.Defaults(),
		Sampling:             sampling.Defaults(),
	}
}

// Validate checks the configuration. The engine would silently replace a
// zero value by its default; a configured zero or negative value is a
// mistake, so it is rejected here instead.
func (c *Config) Validate() error {
	var errs []error
	positiveDuration := func(key string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be a positive duration, got %v", key, d))
		}
	}
	positive := func(key string, n int) {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", key, n))
		}
	}
	if c.AgentName == "" {
		errs = append(errs, errors.New("agent_name must not be empty (it names the turn spans: invoke_agent {agent_name})"))
	}
	positiveDuration("dangling_timeout", c.DanglingTimeout)
	positiveDuration("metrics_flush_interval", c.MetricsFlushInterval)
	positiveDuration("gap_timeout", c.GapTimeout)
	positive("max_open_turns", c.MaxOpenTurns)
	positive("max_sessions", c.MaxSessions)
	positive("max_content_bytes", c.MaxContentBytes)
	positive("max_attribute_values", c.MaxAttributeValues)
	positive("reorder_window", c.ReorderWindow)
	if c.Changelog != nil {
		if c.Storage != nil {
			errs = append(errs, errors.New("storage and changelog are exclusive: the journal is kept in one of them"))
		}
		if err := c.Changelog.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := c.priceTable(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Findings.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Sampling.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.GapTimeout > 0 && c.DanglingTimeout > 0 && c.GapTimeout >= c.DanglingTimeout {
		errs = append(errs, fmt.Errorf("gap_timeout (%v) must be shorter than dangling_timeout (%v): a turn waiting for a missing event would otherwise be closed as dangling first",
			c.GapTimeout, c.DanglingTimeout))
	}
	return errors.Join(errs...)
}

// engineConfig maps the connector's config onto the turn engine's.
func (c *Config) engineConfig() turnengine.Config {
	return turnengine.Config{
		AgentName:       c.AgentName,
		DanglingTimeout: c.DanglingTimeout,
		MaxOpenTurns:    c.MaxOpenTurns,
		MaxSessions:     c.MaxSessions,
		ReorderWindow:   c.ReorderWindow,
		GapTimeout:      c.GapTimeout,
		CaptureContent:  c.CaptureContent,
		LiveSteps:       c.LiveSteps,
		MaxContentBytes: c.MaxContentBytes,
		Findings:        c.Findings,
	}
}

// priceTable builds the price table: the configured entries, then the
// built-in ones for the models not configured.
func (c *Config) priceTable() (*pricing.Table, error) {
	var entries []pricing.Entry
	var errs []error
	configured := map[[2]string]bool{}
	for i, p := range c.Prices {
		e, err := p.entry()
		if err != nil {
			errs = append(errs, fmt.Errorf("prices[%d] (%s/%s): %w", i, p.Provider, p.Model, err))
			continue
		}
		configured[[2]string{e.Provider, e.Model}] = true
		entries = append(entries, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if c.BuiltinPrices {
		for _, e := range pricing.DefaultEntries() {
			if !configured[[2]string{e.Provider, e.Model}] {
				entries = append(entries, e)
			}
		}
	}
	t, err := pricing.New(entries)
	if err != nil {
		return nil, fmt.Errorf("prices: %w", err)
	}
	return t, nil
}

func (p PriceConfig) entry() (pricing.Entry, error) {
	e := pricing.Entry{Provider: p.Provider, Model: p.Model}
	if p.Input == nil || p.Output == nil {
		return e, errors.New("input and output prices are required")
	}
	e.Input, e.Output = *p.Input, *p.Output
	e.CacheRead, e.CacheWrite = e.Input, e.Input
	if p.CacheRead != nil {
		e.CacheRead = *p.CacheRead
	}
	if p.CacheWrite != nil {
		e.CacheWrite = *p.CacheWrite
	}
	e.From, e.Until = p.From, p.Until
	return e, nil
}
