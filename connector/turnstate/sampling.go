package turnstate

import (
	"container/list"
	"context"
	"sync/atomic"
	"time"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// sampler applies turn_state::sampling to the turns a pass drains
// (docs/design.md §12): a kept session's turns and live steps go out as
// they close; a dropped session's live steps are held back until their
// turn closes, and go out with it if the turn is kept for what went wrong,
// or are let go of with it. Its state is guarded by the core's mu: the
// engine tells it of replayed steps (as an observer, under mu) and the
// pass filters under mu.
type sampler struct {
	s   *sampling.Sampler
	tel *metadata.Telemetry
	max int // sampling::max_held_spans

	// held are the live steps of dropped sessions' open turns, by session;
	// order lists the sessions oldest first, to let go of at the bound.
	held  map[string]*heldTurn
	order *list.List
	spans int           // held spans in all
	gauge *atomic.Int64 // the held_spans gauge's value
}

// heldTurn is one open turn's live steps held back.
type heldTurn struct {
	number int64
	frags  []*turnengine.Turn
	spans  int
	elem   *list.Element
}

// newSampler returns the sampler of cfg; its telemetry is set once created.
func newSampler(cfg sampling.Config, gauge *atomic.Int64) *sampler {
	return &sampler{s: sampling.New(cfg), max: cfg.MaxHeldSpans,
		held: map[string]*heldTurn{}, order: list.New(), gauge: gauge}
}

// sampled is a pass's output: the turns to emit and the tracestate of
// each (turnrender.SampledTraces).
type sampled struct {
	turns []*turnengine.Turn
	state []string
}

// filter decides for the turns a pass drained, in closing order, and
// returns those to emit. Called under mu.
func (sp *sampler) filter(ctx context.Context, turns []*turnengine.Turn) sampled {
	var out sampled
	if !sp.s.Config().On() {
		out.turns = turns
		return out
	}
	out.turns = make([]*turnengine.Turn, 0, len(turns))
	out.state = make([]string, 0, len(turns))
	emit := func(t *turnengine.Turn, state string) {
		out.turns = append(out.turns, t)
		out.state = append(out.state, state)
	}
	for _, t := range turns {
		switch {
		case t.Fragment:
			if sp.s.SessionKept(t.SessionID) {
				emit(t, sp.s.TraceState(t.SessionID))
			} else {
				sp.hold(ctx, t)
			}
		case t.Late != nil:
			// The turn it closes went out as dangling, kept whatever the
			// ratio: so does its late close. It is no turn of its own.
			emit(t, sp.s.Always())
		default:
			d := sp.s.Decide(t)
			sp.tel.AddSampled(ctx, d.Keep, d.Reason)
			h := sp.take(t.SessionID, t.Number)
			switch {
			case d.Reason == sampling.Session:
				emit(t, sp.s.TraceState(t.SessionID))
			case d.Keep:
				// Kept for what went wrong: its held steps go out with it,
				// the whole turn at probability 1.
				if h != nil {
					for _, f := range h.frags {
						emit(f, sp.s.Always())
					}
				}
				emit(t, sp.s.Always())
			}
		}
	}
	return out
}

// Closed is the engine telling of a turn it closed (the observer, under
// mu): the live steps a restore rebuilds are not drained, as the run that
// applied them first emitted them — but a dropped session's were held
// back, not emitted, so they are held again here.
func (sp *sampler) Closed(t *turnengine.Turn, _ time.Time) {
	if t.Fragment && t.Replayed && sp.s.Config().On() && !sp.s.SessionKept(t.SessionID) {
		sp.hold(context.Background(), t)
	}
}

func (*sampler) Event(string, time.Time)     {}
func (*sampler) Violation(string, time.Time) {}

// hold keeps a dropped session's live step until its turn closes. A step
// of a later turn replaces what an earlier one held (a turn that never
// closed here: let go of, or handed over). Past max_held_spans the oldest
// held steps are let go of, counted — the oldest turn's first: a turn
// kept later goes out without them.
func (sp *sampler) hold(ctx context.Context, f *turnengine.Turn) {
	n := turnrender.SpanCount(f)
	if h := sp.held[f.SessionID]; h != nil && h.number != f.Number {
		sp.drop(ctx, f.SessionID, h)
	}
	if n > sp.max {
		// Larger than the bound alone: let go of, and nothing else.
		sp.tel.AddHeldDropped(ctx, int64(f.NumSteps()))
		return
	}
	for sp.spans+n > sp.max && sp.order.Len() > 0 {
		oldest := sp.order.Front().Value.(string)
		h := sp.held[oldest]
		first := h.frags[0]
		h.frags[0] = nil
		h.frags = h.frags[1:]
		m := turnrender.SpanCount(first)
		h.spans -= m
		sp.spans -= m
		sp.tel.AddHeldDropped(ctx, int64(first.NumSteps()))
		if len(h.frags) == 0 {
			sp.remove(oldest, h)
		}
	}
	h := sp.held[f.SessionID]
	if h == nil {
		h = &heldTurn{number: f.Number}
		h.elem = sp.order.PushBack(f.SessionID)
		sp.held[f.SessionID] = h
	}
	h.frags = append(h.frags, f)
	h.spans += n
	sp.spans += n
	sp.publish()
}

// drop lets go of a session's held steps, counted as dropped.
func (sp *sampler) drop(ctx context.Context, session string, h *heldTurn) {
	var steps int64
	for _, f := range h.frags {
		steps += int64(f.NumSteps())
	}
	sp.tel.AddHeldDropped(ctx, steps)
	sp.remove(session, h)
}

// take removes and returns the steps held for a session's turn (nil when
// none are).
func (sp *sampler) take(session string, number int64) *heldTurn {
	h := sp.held[session]
	if h == nil {
		return nil
	}
	sp.remove(session, h)
	if h.number != number {
		return nil
	}
	return h
}

func (sp *sampler) remove(session string, h *heldTurn) {
	sp.order.Remove(h.elem)
	delete(sp.held, session)
	sp.spans -= h.spans
	sp.publish()
}

// forget lets go, uncounted, of what a session that left this instance
// held (handed over to another, which rebuilds it from the journal).
func (sp *sampler) forget(session string) {
	if h := sp.held[session]; h != nil {
		sp.remove(session, h)
	}
}

func (sp *sampler) publish() { sp.gauge.Store(int64(sp.spans)) }

// observers tells every observer of the engine, in order.
type observers []turnengine.Observer

func (o observers) Event(eventType string, now time.Time) {
	for _, x := range o {
		x.Event(eventType, now)
	}
}

func (o observers) Violation(code string, now time.Time) {
	for _, x := range o {
		x.Violation(code, now)
	}
}

func (o observers) Closed(t *turnengine.Turn, now time.Time) {
	for _, x := range o {
		x.Closed(t, now)
	}
}
