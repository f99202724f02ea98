package turnstate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/journal"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// This file is the core's side of the journal (internal/journal): which
// one it opens, how a session read back is resumed, and what a pass asks
// it to write.

// openJournal opens the journal the configuration names, if any, and
// restores its sessions.
func (c *core) openJournal(ctx context.Context, host component.Host) error {
	o := journal.Options{Logger: c.logger, Telemetry: c.tel, Lag: &c.gauges.lag}
	if id := c.cfg.Storage; id != nil {
		j, err := journal.OpenStorage(ctx, host, *id, c.self, o)
		if err != nil {
			return err
		}
		if err := c.restore(ctx, j); err != nil {
			return fmt.Errorf("turn_state: restore the sessions from %s: %w", id, err)
		}
	}
	if cl := c.cfg.Changelog; cl != nil {
		j, err := c.openChangelog(ctx, cl.withDefaults(), o)
		if err != nil {
			return fmt.Errorf("turn_state: open the changelog: %w", err)
		}
		c.gauges.view.Store(j)
		if err := c.restore(ctx, j); err != nil {
			j.Log().Close()
			return fmt.Errorf("turn_state: restore the sessions from the changelog: %w", err)
		}
	}
	return nil
}

// openChangelog opens the changelog journal of cfg and reads it to its end.
func (c *core) openChangelog(ctx context.Context, cfg ChangelogConfig, o journal.Options) (*journal.Changelog, error) {
	lc := changelog.Config{
		Brokers: cfg.Brokers, Topic: cfg.Topic, Owner: cfg.Owner,
		Partitions: cfg.Partitions, ReplicationFactor: cfg.ReplicationFactor,
		MaxRecordBytes: cfg.MaxRecordBytes, Compression: cfg.Compression,
	}
	if cfg.TLS != nil {
		tlsCfg, err := cfg.TLS.LoadTLSConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("changelog::tls: %w", err)
		}
		lc.TLS = tlsCfg
	}
	if cfg.Auth != nil {
		m, err := cfg.Auth.mechanism()
		if err != nil {
			return nil, err
		}
		lc.SASL = m
	}
	return journal.OpenChangelog(ctx, journal.ChangelogOptions{
		Options: o, Log: lc, Timeout: cfg.Timeout, ConsumerGroup: cfg.ConsumerGroup,
		SweepInterval: c.sweepInterval(), Clock: c.clock,
	})
}

// restore loads every session j resumes and, in one pass, makes j the
// core's journal and resumes each session. The pass holds the turns the
// records close for the first pass after it (the next consumers may not
// run yet); its journal write forgets the sessions beyond max_sessions.
func (c *core) restore(ctx context.Context, j journal.Journal) error {
	rs, err := j.Load(ctx)
	if err != nil {
		return err
	}
	var open int
	var events int64
	err = c.settle(ctx, pass{hold: true, change: func(now time.Time) map[string]*journal.Kept {
		c.journal = j
		for _, r := range rs {
			events += c.resume(r, now)
		}
		open = c.engine.OpenTurns()
		return nil
	}})
	if err != nil {
		return err
	}
	c.tel.JournalRestored.Add(ctx, events)
	c.logger.Info("Sessions restored from the journal", zap.Int("sessions", len(rs)), zap.Int("open_turns", open), zap.Int64("events", events))
	return nil
}

// resume starts tracking a session read back from the journal: its mark
// first, then its records from the mark's Retain on, re-applied without
// being counted again; it returns the events re-applied. Callers hold mu.
func (c *core) resume(r journal.Restored, now time.Time) int64 {
	var events int64
	c.engine.Resume(r.ID, r.Mark, now)
	for _, in := range c.read(context.Background(), r.Logs, now, nil, true) {
		if in.Event.Seq >= r.Mark.Retain {
			c.engine.Ingest(in, now)
			events++
		}
	}
	return events
}

// journalOps are the journal writes that bring it up to date with the
// engine after a pass, given the records it kept and the turns it drained:
// the sessions of both are rewritten, the forgotten deleted. Callers hold
// mu; nil without a journal.
func (c *core) journalOps(keep map[string]*journal.Kept, turns []*turnengine.Turn) []*storage.Operation {
	if c.journal == nil {
		return nil
	}
	ids := make([]string, 0, len(keep)+len(turns))
	for id := range keep {
		ids = append(ids, id)
	}
	for _, t := range turns {
		if keep[t.SessionID] == nil {
			ids = append(ids, t.SessionID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return c.journal.Update(c.engine.Mark, ids, keep, c.engine.DrainForgotten())
}

// peek runs fn with the engine under mu: a journal's Before steps run
// under passMu alone.
func (c *core) peek(fn func(journal.Engine)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(sessions{c})
}

// sessions is the engine as a journal sees it. Its methods are called
// under mu.
type sessions struct{ c *core }

var _ journal.Engine = sessions{}

func (s sessions) Holds(id string) bool {
	_, ok := s.c.engine.Mark(id)
	return ok
}

func (s sessions) Resume(r journal.Restored, now time.Time) int64 { return s.c.resume(r, now) }

func (s sessions) Release(id string) (open, held bool) {
	s.c.sampler.forget(id)
	return s.c.engine.Release(id)
}

func (s sessions) Forget(id string) { s.c.in.forget(id) }

func (s sessions) Due(t time.Time) []string { return s.c.engine.Due(t) }

func (s sessions) OpenTurns() int { return s.c.engine.OpenTurns() }
