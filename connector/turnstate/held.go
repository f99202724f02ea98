package turnstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// outputs are the core's next consumers, wired by the instances as they
// are created: what goes out to them, and the closed turns the traces
// consumer refused.
type outputs struct {
	logger *zap.Logger
	tel    *metadata.Telemetry
	gauge  *atomic.Int64 // the turns_held gauge's value

	mu      sync.Mutex // a leaf: guards the three below
	traces  consumer.Traces
	metrics consumer.Metrics
	claimed bool // an instance ingests: the first wired

	// held are the turns the traces consumer refused, offered again at the
	// start of every pass; no pass applies anything while they are held.
	// heldSince is when the refusals began. Both are guarded by passMu.
	held      *heldTraces
	heldSince time.Time
}

// wire adds an instance's next consumers; it reports whether the instance
// is the one that ingests: the first wired.
func (o *outputs) wire(traces consumer.Traces, metrics consumer.Metrics) (ingests bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if traces != nil {
		o.traces = traces
	}
	if metrics != nil {
		o.metrics = metrics
	}
	ingests = !o.claimed
	o.claimed = true
	return ingests
}

// next are the next consumers (nil where none is wired).
func (o *outputs) next() (consumer.Traces, consumer.Metrics) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.traces, o.metrics
}

// heldTraces are closed turns the traces consumer refused: they are
// offered again, as they are, before anything else changes.
type heldTraces struct {
	next consumer.Traces
	out  sampled
}

// errHeld refuses a pass while the traces consumer refuses the turns held:
// a retryable error, so the sender of the batch sends it again later.
var errHeld = errors.New("turn_state: the traces consumer refuses closed turns; they are held, and batches refused until it accepts them")

// emitTraces hands closed turns to the traces consumer, if there is one.
// Called under passMu, without mu. A refusal is counted and returned.
func (o *outputs) emitTraces(ctx context.Context, next consumer.Traces, out sampled) error {
	if next == nil || len(out.turns) == 0 {
		return nil
	}
	if err := next.ConsumeTraces(ctx, turnrender.SampledTraces(metadata.ScopeName, out.turns, out.state)); err != nil {
		o.tel.AddEmitFailure(ctx, metadata.SignalTraces)
		return err
	}
	return nil
}

// hold keeps the turns a pass closed when the traces consumer refused
// them (err), and fails the pass; the caller keeps the pass's journal
// writes back. The first refusal of an episode is logged once. Called
// under passMu.
func (o *outputs) hold(next consumer.Traces, out sampled, err error) error {
	o.held = &heldTraces{next: next, out: out}
	o.gauge.Store(int64(len(out.turns)))
	if o.heldSince.IsZero() {
		o.heldSince = time.Now()
		o.logger.Error("The traces consumer refuses closed turns: they are held and offered again, and batches are refused "+
			"(their senders retry: HTTP 503, the file tailer waits, Kafka redelivers) until it accepts them; nothing is dropped",
			zap.Int("turns", len(out.turns)), zap.Error(err))
	}
	return fmt.Errorf("%w: %v", errHeld, err)
}

// offerHeld offers the held turns to the traces consumer again; an error
// refuses the pass. Accepted, the episode's end is logged once. Called
// under passMu.
func (o *outputs) offerHeld(ctx context.Context) error {
	h := o.held
	if h == nil {
		return nil
	}
	if err := o.emitTraces(ctx, h.next, h.out); err != nil {
		return fmt.Errorf("%w: %v", errHeld, err)
	}
	o.logger.Info("The traces consumer accepts turns again; the held turns are delivered",
		zap.Int("turns", len(h.out.turns)), zap.Duration("refused_for", time.Since(o.heldSince).Round(time.Millisecond)))
	o.held, o.heldSince = nil, time.Time{}
	o.gauge.Store(0)
	return nil
}

// shutdownHeld reports the turns still held at the final pass: with a
// journal they are open in it and close again after the restart, when
// their events are delivered again; without one they are lost.
func (o *outputs) shutdownHeld(ctx context.Context, journaled bool) {
	h := o.held
	if h == nil {
		return
	}
	if journaled {
		o.logger.Warn("Stopping with closed turns the traces consumer refused: the journal keeps them open, and they close again after the restart",
			zap.Int("turns", len(h.out.turns)))
		return
	}
	o.tel.TurnsLost.Add(ctx, int64(len(h.out.turns)))
	o.logger.Error("Stopping with closed turns the traces consumer refused, and no journal: they are lost",
		zap.Int("turns", len(h.out.turns)))
}

// emitMetrics hands a metrics snapshot to the metrics consumer. Called
// without mu. A refused snapshot is made good by the next: the metrics
// are cumulative.
func (o *outputs) emitMetrics(ctx context.Context, next consumer.Metrics, md pmetric.Metrics) {
	if err := next.ConsumeMetrics(ctx, md); err != nil {
		o.tel.AddEmitFailure(ctx, metadata.SignalMetrics)
		o.logger.Warn("Next consumer refused turn metrics; the next flush carries the cumulative values", zap.Error(err))
	}
}
