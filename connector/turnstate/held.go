package turnstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// outputs are the core's next consumers, wired by the instances as they
// are created, and the closed turns the traces consumer refused.
type outputs struct {
	mu       sync.Mutex // a leaf: guards the three below
	traces   consumer.Traces
	metrics  consumer.Metrics
	ingester *instance // the one instance that hands batches to the core

	// held are the turns the traces consumer refused, offered again at the
	// start of every pass; no pass applies anything while they are held.
	// heldSince is when the refusals began. Both are guarded by passMu.
	held      *heldTraces
	heldSince time.Time
}

// wire adds an instance's next consumers; the first instance wired is the
// ingester.
func (o *outputs) wire(in *instance, traces consumer.Traces, metrics consumer.Metrics) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if traces != nil {
		o.traces = traces
	}
	if metrics != nil {
		o.metrics = metrics
	}
	if o.ingester == nil {
		o.ingester = in
	}
}

// next are the next consumers (nil where none is wired).
func (o *outputs) next() (consumer.Traces, consumer.Metrics) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.traces, o.metrics
}

// ingests reports whether in is the ingester.
func (o *outputs) ingests(in *instance) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ingester == in
}

// heldTraces are closed turns the traces consumer refused: they are
// offered again, as they are, before anything else changes.
type heldTraces struct {
	next  consumer.Traces
	turns []*turnengine.Turn
}

// errHeld refuses a pass while the traces consumer refuses the turns held:
// a retryable error, so the sender of the batch sends it again later.
var errHeld = errors.New("turn_state: the traces consumer refuses closed turns; they are held, and batches refused until it accepts them")

// hold keeps the turns a pass closed when the traces consumer refused
// them (err): the pass's journal writes are kept back — the sessions it
// touched are left behind, so the first pass after the turns are accepted
// writes their state whole — and the pass fails. The first refusal of an
// episode is logged once. Called under passMu.
func (c *core) hold(ctx context.Context, next consumer.Traces, turns []*turnengine.Turn, err error) error {
	o := c.out
	o.held = &heldTraces{next: next, turns: turns}
	c.gauges.heldTurns.Store(int64(len(turns)))
	if c.journal != nil {
		c.journal.KeepBack()
	}
	if o.heldSince.IsZero() {
		o.heldSince = time.Now()
		c.logger.Error("The traces consumer refuses closed turns: they are held and offered again, and batches are refused "+
			"(their senders retry: HTTP 503, the file tailer waits, Kafka redelivers) until it accepts them; nothing is dropped",
			zap.Int("turns", len(turns)), zap.Error(err))
	}
	return fmt.Errorf("%w: %v", errHeld, err)
}

// offerHeld offers the held turns to the traces consumer again; an error
// refuses the pass. Accepted, the episode's end is logged once. Called
// under passMu.
func (c *core) offerHeld(ctx context.Context) error {
	h := c.out.held
	if h == nil {
		return nil
	}
	if err := c.emitTraces(ctx, h.next, h.turns); err != nil {
		return fmt.Errorf("%w: %v", errHeld, err)
	}
	c.logger.Info("The traces consumer accepts turns again; the held turns are delivered",
		zap.Int("turns", len(h.turns)), zap.Duration("refused_for", time.Since(c.out.heldSince).Round(time.Millisecond)))
	c.out.held, c.out.heldSince = nil, time.Time{}
	c.gauges.heldTurns.Store(0)
	return nil
}

// shutdownHeld reports the turns still held at the final pass: with a
// journal they are open in it and close again after the restart, when
// their events are delivered again; without one they are lost.
func (c *core) shutdownHeld(ctx context.Context) {
	h := c.out.held
	if h == nil {
		return
	}
	if c.journal != nil {
		c.logger.Warn("Stopping with closed turns the traces consumer refused: the journal keeps them open, and they close again after the restart",
			zap.Int("turns", len(h.turns)))
		return
	}
	c.tel.TurnsLost.Add(ctx, int64(len(h.turns)))
	c.logger.Error("Stopping with closed turns the traces consumer refused, and no journal: they are lost",
		zap.Int("turns", len(h.turns)))
}
