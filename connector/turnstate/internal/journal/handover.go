package journal

import (
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog"
	"github.com/dshtrace/dshtrace/internal/logrecord"
)

// This file moves sessions between the instances of a consumer group: it
// lets go of what another instance took over and resumes what this one
// takes. Its steps run inside a pass, under the core's state lock.

// handOver lets go of the sessions another instance wrote since the last
// pass: no span, no metric, no journal write. A session of a partition
// this instance consumed that another instance wrote means the partition
// moved there: every session of that partition is let go of, and the view
// stops reading it (unless it is current, the source of the batch of this
// pass: then this instance has it back, and the sessions written
// elsewhere are restored from the view).
func (c *Changelog) handOver(ctx context.Context, e Engine, current string) {
	var h handed
	moved := map[string]bool{}
	for _, g := range c.log.DrainForeign() {
		id, ok := sessionOfKey(g)
		if !ok {
			continue
		}
		if src := c.sourceOf(id); src != "" && src != current && e.Holds(id) {
			moved[src] = true
		}
		h.add(c.letGo(e, id))
	}
	var sources []string
	for src := range moved {
		sources = append(sources, src)
	}
	c.dropPartitions(e, sources, &h)
	h.report(ctx, c)
}

// handed counts the sessions let go of in a pass, and their open turns.
type handed struct{ sessions, turns int64 }

func (h *handed) add(held, open bool) {
	if held {
		h.sessions++
	}
	if open {
		h.turns++
	}
}

func (h *handed) report(ctx context.Context, c *Changelog) {
	if h.sessions > 0 {
		c.Telemetry.TurnsHandedOver.Add(ctx, h.turns)
		c.Logger.Info("Sessions taken over by another instance let go of", zap.Int64("sessions", h.sessions), zap.Int64("open_turns", h.turns))
	}
}

// letGo stops tracking a session another instance carries on, writing
// nothing; it reports whether it was tracked, and had a turn open.
func (c *Changelog) letGo(e Engine, id string) (held, open bool) {
	open, inEngine := e.Release(id)
	if !inEngine && !c.has(id) {
		return false, false
	}
	c.release(id)
	c.mu.Lock()
	delete(c.source, id)
	c.mu.Unlock()
	e.Forget(id)
	return true, open
}

// resumeOwnSessions resumes the sessions an earlier start of this owner
// wrote last that the engine does not hold, as a start does when its view
// holds the whole changelog. The view was synced in this pass.
func (c *Changelog) resumeOwnSessions(ctx context.Context, e Engine, now time.Time) int {
	var ids []string
	c.log.Groups(func(g, writer string) {
		if id, ok := sessionOfKey(g); ok && changelog.OwnerOf(writer) == c.opts.Log.Owner && writer != c.log.Writer() {
			ids = append(ids, id)
		}
	})
	slices.Sort(ids)
	n := 0
	for _, id := range ids {
		if r, ent, ok := c.readToResume(ctx, e, id); ok {
			c.adopt1(r, ent)
			e.Resume(r, now)
			n++
		}
	}
	return n
}

// adopt1 makes a session read back from the view this instance's.
func (c *Changelog) adopt1(r Restored, ent *entry) { c.ledger.adopt(r, ent, true) }

// readToResume reads from the journal a session the engine does not hold:
// false when it holds it, or the journal has no entry of it, or one that
// cannot be decoded — that would fail the same way on every retry, so the
// session starts afresh instead (counted, and said).
func (c *Changelog) readToResume(ctx context.Context, e Engine, id string) (Restored, *entry, bool) {
	if e.Holds(id) {
		return Restored{}, nil, false
	}
	r, ent, ok, err := c.readSession(ctx, id)
	if err != nil {
		c.Telemetry.RestoreFailures.Add(ctx, 1)
		c.Logger.Error("Session journal unreadable; the session starts afresh", zap.String("session", id), zap.Error(err))
		return Restored{}, nil, false
	}
	return r, ent, ok
}

// restorePartition resumes, when a batch is the first of its partition
// after an assignment (or a gap), every session of that partition that the
// view holds with a turn open and the engine does not: the partition's
// state, not only the sessions its next batches happen to bring. A session
// whose partition moved here and that gets no other event is so still
// closed as dangling after dangling_timeout, here; and the rewrite of its
// entry tells its old owner to let it go. The view was synced in this
// pass.
func (c *Changelog) restorePartition(ctx context.Context, e Engine, source string, now time.Time) int {
	groups, _ := c.log.GroupsFrom(source)
	n := 0
	for _, g := range groups {
		id, ok := sessionOfKey(g)
		if !ok {
			continue
		}
		r, ent, ok := c.readToResume(ctx, e, id)
		if !ok || r.Mark.Open == 0 {
			continue // nothing open: its next batch, if any, restores it on sight
		}
		c.adopt1(r, ent)
		c.mu.Lock()
		c.source[id] = source
		c.mu.Unlock()
		e.Resume(r, now)
		n++
	}
	return n
}

// restores reports whether a batch brings a session the engine does not
// hold and the view has keys of: a session restored from the changelog is
// always restored after the read barrier, so that it carries on from the
// session's latest write, whoever made it.
func (c *Changelog) restores(ctx context.Context, ld plog.Logs, peek Peek) bool {
	found := false
	peek(func(e Engine) {
		for _, id := range BatchSessions(ld, logrecord.ClientFromContext(ctx)) {
			if e.Holds(id) {
				continue
			}
			if keys, _ := c.log.Keys(SessionKey(id)); len(keys) > 0 {
				found = true
				return
			}
		}
	})
	return found
}

// restoreFirstSight resumes, before a batch is applied, each session of
// the batch that the engine does not hold and the changelog has a journal
// of. The view was synced in this pass.
func (c *Changelog) restoreFirstSight(ctx context.Context, e Engine, ld plog.Logs, now time.Time) int {
	n := 0
	for _, id := range BatchSessions(ld, logrecord.ClientFromContext(ctx)) {
		if keys, _ := c.log.Keys(SessionKey(id)); len(keys) == 0 {
			continue // a new session
		}
		r, ent, ok := c.readToResume(ctx, e, id)
		if !ok {
			continue
		}
		c.adopt1(r, ent)
		e.Resume(r, now)
		n++
	}
	return n
}

// BatchSessions lists the sessions (their keys, clientid.Key) of a
// batch's records, in first-seen order, read as logrecord.Reader reads
// them; client is the batch's (logrecord.ClientFromContext).
func BatchSessions(ld plog.Logs, client string) []string {
	var out []string
	seen := map[string]bool{}
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		sls := rl.ScopeLogs()
		for k := 0; k < sls.Len(); k++ {
			lrs := sls.At(k).LogRecords()
			for m := 0; m < lrs.Len(); m++ {
				id := logrecord.SessionKey(rl.Resource(), lrs.At(m), client)
				if id != "" && !seen[id] {
					seen[id] = true
					out = append(out, id)
				}
			}
		}
	}
	return out
}
