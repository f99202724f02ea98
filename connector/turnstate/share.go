package turnstate

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
)

// The service creates two instances of turn_state — logs→traces and
// logs→metrics — with the same *Config, and hands every logs batch to both
// (docs/design.md §9.2). They share one core, keyed by that pointer, so
// each event is counted once (docs/design.md §9.3). The registry is the only state shared
// beyond one core; registryMu is a leaf lock (see core).
var (
	registryMu sync.Mutex
	registry   = map[*Config]*core{}
)

// instance is one of the connector instances the service creates; both
// delegate to the shared core.
type instance struct {
	c       *core
	ingests bool // the one instance that hands batches to the core
}

var _ connector.Logs = (*instance)(nil)

// attach returns a new instance on the core of cfg, creating the core if
// needed, and wires the instance's next consumer into it. The first
// instance created is the core's single ingester.
func attach(cfg *Config, set connector.Settings, traces consumer.Traces, metrics consumer.Metrics, clock func() time.Time) (*instance, error) {
	c, err := coreOf(cfg, set, clock)
	if err != nil {
		return nil, err
	}
	return &instance{c: c, ingests: c.out.wire(traces, metrics)}, nil
}

// coreOf is the core of cfg, created if needed.
func coreOf(cfg *Config, set connector.Settings, clock func() time.Time) (*core, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	c := registry[cfg]
	if c == nil {
		var err error
		if c, err = newCore(cfg, set, clock); err != nil {
			return nil, err
		}
		registry[cfg] = c
	}
	return c, nil
}

// detach takes the core out of the registry, so instances created later
// with the same config get a fresh core instead of a dead one.
func detach(c *core) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if registry[c.cfg] == c {
		delete(registry, c.cfg)
	}
}

// Capabilities: the input is only read.
func (in *instance) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

// Start starts the shared core, once for both instances.
func (in *instance) Start(ctx context.Context, host component.Host) error {
	return in.c.start(ctx, host)
}

// Shutdown shuts the shared core down on the first call, whichever
// instance it comes to; later calls return at once.
func (in *instance) Shutdown(ctx context.Context) error {
	err := in.c.shutdown(ctx)
	detach(in.c)
	return err
}

// ConsumeLogs hands a batch to the core. Only the ingester instance does;
// the other gets the same batch and ignores it.
func (in *instance) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if !in.ingests {
		return nil
	}
	return in.c.consume(ctx, ld)
}
