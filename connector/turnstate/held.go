package turnstate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/turnengine"
)

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
// episode is logged once. Called under drainMu.
func (c *core) hold(ctx context.Context, next consumer.Traces, turns []*turnengine.Turn, err error) error {
	c.held = &heldTraces{next: next, turns: turns}
	c.heldTurns.Store(int64(len(turns)))
	c.keepJournalBack()
	if c.heldSince.IsZero() {
		c.heldSince = time.Now()
		c.logger.Error("The traces consumer refuses closed turns: they are held and offered again, and batches are refused "+
			"(their senders retry: HTTP 503, the file tailer waits, Kafka redelivers) until it accepts them; nothing is dropped",
			zap.Int("turns", len(turns)), zap.Error(err))
	}
	return fmt.Errorf("%w: %v", errHeld, err)
}

// offerHeld offers the held turns to the traces consumer again; an error
// refuses the pass. Accepted, the episode's end is logged once. Called
// under drainMu.
func (c *core) offerHeld(ctx context.Context) error {
	h := c.held
	if h == nil {
		return nil
	}
	if err := c.emitTraces(ctx, h.next, h.turns); err != nil {
		return fmt.Errorf("%w: %v", errHeld, err)
	}
	c.logger.Info("The traces consumer accepts turns again; the held turns are delivered",
		zap.Int("turns", len(h.turns)), zap.Duration("refused_for", time.Since(c.heldSince).Round(time.Millisecond)))
	c.held, c.heldSince = nil, time.Time{}
	c.heldTurns.Store(0)
	return nil
}

// keepJournalBack drops the journal writes of a pass whose turns were not
// delivered: the sessions it touched are behind, and the next pass that
// delivers rewrites them whole.
func (c *core) keepJournalBack() {
	j := c.journal
	if j == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range j.touched {
		j.behind[id] = struct{}{}
	}
	j.touched = nil
	c.lag.Store(int64(len(j.behind)))
}

// shutdownHeld reports the turns still held at the final pass: with a
// journal they are open in it and close again after the restart, when
// their events are delivered again; without one they are lost.
func (c *core) shutdownHeld(ctx context.Context) {
	h := c.held
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
