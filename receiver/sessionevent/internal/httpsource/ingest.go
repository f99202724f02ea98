package httpsource

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource/dedup"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// The HTTP source's path from a judged request body (body.go) to records
// delivered and remembered.

// ingest delivers a judged request, in five steps:
//
//  1. openSessions: the dedup state of every session of the request, and
//     the record tracker put at the position stored with it;
//  2. build: the rows not accepted before become records (the others are
//     counted as duplicates), the tracker advancing over them;
//  3. deliver: the records go to the next consumer in one call;
//  4. on a refusal, rollback: the tracker goes back to where it was, and
//     nothing of the request is remembered (a retry is judged afresh);
//  5. on success, commit: the rows are remembered as accepted, and the
//     state is written through to the storage extension.
//
// The sessions' stripe locks are held throughout, so two requests for one
// session are ingested one after the other and each row is emitted once.
func (h *Source) ingest(ctx context.Context, pb *parsedBody) (accepted, dups int, err error) {
	unlock := h.dedup.LockSessions(pb.ids())
	defer unlock()
	states := h.openSessions(ctx, pb)
	d := h.build(pb, states)
	if err := h.deliver(ctx, d); err != nil {
		h.rollback(d)
		if !consumererror.IsPermanent(err) {
			h.refusing.Strike(err)
		}
		return 0, 0, refusal(err)
	}
	h.refusing.Clear()
	if err := h.commit(ctx, d); err != nil {
		return 0, 0, notStored(err)
	}
	return d.accepted, d.dups, nil
}

// delivery is one request between build and commit: the records to
// deliver and what to remember once they are delivered.
type delivery struct {
	ld plog.Logs
	// accepted counts the records in ld, dups the rows known already.
	accepted, dups int
	// states are the dedup states of the request's sessions, in order.
	states []*dedup.Session
	// marks are the seqs (and headers) to remember as accepted.
	marks []mark
	// adopted are the sessions whose header adopts the rows accepted
	// before under dedup.UnknownVersion.
	adopted []adoption
	// saved are the tracker positions before the request, for rollback.
	saved map[string]logrecord.Position
}

// mark is one delivered row to remember: [a, b] of a session's format
// version, or (header) its header.
type mark struct {
	st      *dedup.Session
	version int
	a, b    int64
	header  bool
}

// adoption: a session's first header makes the rows posted before it,
// keyed by dedup.UnknownVersion, rows of its version.
type adoption struct {
	st      *dedup.Session
	version int
}

// openSessions returns the dedup state of each session of the request (in
// pb.sessions order), loading or creating it. It guarantees that the
// tracker's position for each is the one stored with its state (for a
// state loaded now from storage) or the tracker's own, and that sessions
// evicted to make room have no tracker position left.
func (h *Source) openSessions(ctx context.Context, pb *parsedBody) []*dedup.Session {
	states := make([]*dedup.Session, 0, len(pb.sessions))
	for _, s := range pb.sessions {
		st, loaded, evicted := h.dedup.Session(ctx, s.id)
		states = append(states, st)
		h.trackerMu.Lock()
		for _, id := range evicted {
			h.tracker.Restore(id, logrecord.Position{})
		}
		if !loaded.IsZero() {
			h.tracker.Restore(s.id, loaded)
		}
		h.trackerMu.Unlock()
	}
	return states
}

// build turns the rows of the request not accepted before into records,
// in order, header first per session. It changes no dedup state: what
// was accepted is recorded in the delivery's marks, applied by commit.
// The tracker advances over the new rows; the positions it had before are
// saved in the delivery for rollback.
func (h *Source) build(pb *parsedBody, states []*dedup.Session) *delivery {
	d := &delivery{ld: plog.NewLogs(), states: states, saved: make(map[string]logrecord.Position, len(pb.sessions))}
	now := h.now()
	h.trackerMu.Lock()
	defer h.trackerMu.Unlock()
	for i, s := range pb.sessions {
		d.saved[s.id] = h.tracker.Save(s.id)
		h.buildSession(d, s, states[i], now)
	}
	return d
}

// buildSession adds one session's new rows to d.
func (h *Source) buildSession(d *delivery, s *parsedSession, st *dedup.Session, now time.Time) {
	f := s.dec.Format()
	k := st.Known(s.header != nil, f.Version)
	if k.Adopt {
		d.adopted = append(d.adopted, adoption{st, k.Version})
	}
	var lrs plog.LogRecordSlice
	hasLRS := false
	appendRow := func(row *sessionlog.Row) {
		if !hasLRS {
			lrs, hasLRS = logrecord.NewResourceLogs(d.ld, metadata.ScopeName, s.id, nil), true
		}
		h.tracker.Append(lrs, s.id, row, f, now)
		d.accepted++
	}
	if s.header != nil {
		if k.Header() {
			d.dups++
		} else {
			appendRow(s.header)
		}
		d.marks = append(d.marks, mark{st: st, version: k.Version, header: true})
	}
	d.dups += s.dups
	for _, row := range s.rows {
		a, b := row.FirstSeq(), row.LastSeq()
		if k.Contains(a, b) {
			d.dups++
			continue
		}
		appendRow(row)
		d.marks = append(d.marks, mark{st: st, version: k.Version, a: a, b: b})
	}
}

// deliver hands the records to the next consumer in one call, measured by
// obsreport. A request with no new row delivers nothing and succeeds.
func (h *Source) deliver(ctx context.Context, d *delivery) error {
	if d.accepted == 0 {
		return nil
	}
	opCtx := h.obs.StartLogsOp(ctx)
	err := h.next.ConsumeLogs(opCtx, d.ld)
	h.obs.EndLogsOp(opCtx, "jsonl", d.accepted, err)
	return err
}

// rollback undoes build after a refused delivery: the tracker goes back to
// the saved positions. The dedup state was not changed.
func (h *Source) rollback(d *delivery) {
	h.trackerMu.Lock()
	defer h.trackerMu.Unlock()
	for id, p := range d.saved {
		h.tracker.Restore(id, p)
	}
}

// commit remembers a delivered request: adopted unknown-version rows move
// under their header's version, every delivered seq and header is marked
// accepted, and the sessions' states (with their tracker positions) are
// written to the storage extension. A failed write is counted and
// returned, and the sessions are unsaved: the rows are delivered, and
// remembered in memory (a retry of the request delivers nothing again),
// but no request of theirs is acknowledged until a write lands.
func (h *Source) commit(ctx context.Context, d *delivery) error {
	var abandoned int64
	for _, a := range d.adopted {
		abandoned += a.st.Adopt(a.version)
	}
	for _, m := range d.marks {
		if m.header {
			m.st.AcceptHeader(m.version)
			continue
		}
		abandoned += m.st.Accept(m.version, m.a, m.b)
	}
	if abandoned > 0 {
		h.set.Logger.Debug("Dedup state full: gave up waiting for missing seqs", zap.Int64("seqs", abandoned))
	}
	if d.accepted == 0 && len(d.marks) == 0 && !h.anyUnsaved(d.states) {
		return nil // nothing changed
	}
	// Not cancelled with the request: the rows are delivered, their state
	// must be written even if the client went away.
	if err := h.dedup.Persist(context.WithoutCancel(ctx), d.states, h.savePosition); err != nil {
		h.markUnsaved(d.states, true)
		h.tel.StateWriteFailed(ctx)
		h.storing.Strike(err)
		return err
	}
	h.markUnsaved(d.states, false)
	h.storing.Clear()
	return nil
}

func (h *Source) anyUnsaved(states []*dedup.Session) bool {
	h.unsavedMu.Lock()
	defer h.unsavedMu.Unlock()
	for _, st := range states {
		if _, ok := h.unsaved[st]; ok {
			return true
		}
	}
	return false
}

func (h *Source) markUnsaved(states []*dedup.Session, unsaved bool) {
	h.unsavedMu.Lock()
	defer h.unsavedMu.Unlock()
	for _, st := range states {
		if unsaved {
			h.unsaved[st] = struct{}{}
		} else {
			delete(h.unsaved, st)
		}
	}
}

func (h *Source) restorePosition(id string, p logrecord.Position) {
	h.trackerMu.Lock()
	defer h.trackerMu.Unlock()
	h.tracker.Restore(id, p)
}

func (h *Source) savePosition(id string) logrecord.Position {
	h.trackerMu.Lock()
	defer h.trackerMu.Unlock()
	return h.tracker.Save(id)
}
