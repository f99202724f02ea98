package turnstate

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// read turns a batch of log records into engine inputs: records that are
// no session event or cannot be decoded are counted and skipped, decoding
// problems are counted as violations, and each session's events are
// sorted by seq — a cheap reordering that spares the engine's reorder
// window. Callers hold mu (the reader and the engine are the core's).
//
// With keep, the records are also filed by session for the journal
// (keepRecord). restoring: the records come from the journal and were
// counted when they first arrived, so nothing is counted again.
func (c *core) read(ctx context.Context, ld plog.Logs, now time.Time, keep map[string]*kept, restoring bool) []turnengine.Input {
	type group struct {
		id     string
		inputs []turnengine.Input
	}
	var groups []*group
	bySession := map[string]*group{}
	var notSession, invalid int64
	c.reader.ReadBatch(ld, func(res pcommon.Resource, lr plog.LogRecord, rec logrecord.Record, err error) {
		if errors.Is(err, logrecord.ErrNotSession) {
			notSession++
			return
		}
		if err != nil {
			invalid++
			c.logger.Debug("Undecodable session record", zap.Error(err))
			return
		}
		if !restoring {
			for _, p := range rec.Row.Problems {
				c.engine.RecordViolation(p.Code, now)
			}
		}
		switch rec.Row.Kind {
		case sessionlog.RowInvalid:
			invalid++
			return
		case sessionlog.RowOther:
			notSession++
			return
		}
		g := bySession[rec.SessionID]
		if g == nil {
			g = &group{id: rec.SessionID}
			bySession[rec.SessionID] = g
			groups = append(groups, g)
		}
		if keep != nil {
			keepRecord(keep, rec, res, lr)
		}
		for e := range rec.Row.Events {
			g.inputs = append(g.inputs, turnengine.Input{
				SessionID: rec.SessionID,
				Event:     &rec.Row.Events[e],
				Format:    rec.Format,
				Header:    rec.Header,
				Gappy:     rec.Origin == logrecord.OriginDshV0,
			})
		}
	})
	if !restoring {
		c.tel.AddDropped(ctx, metadata.ReasonNotSession, notSession)
		c.tel.AddDropped(ctx, metadata.ReasonInvalid, invalid)
	}
	bySeq := func(a, b turnengine.Input) int { return cmp.Compare(a.Event.Seq, b.Event.Seq) }
	for _, g := range groups {
		if !slices.IsSortedFunc(g.inputs, bySeq) { // the common case: a source in order
			slices.SortStableFunc(g.inputs, bySeq)
		}
	}
	if len(groups) == 1 { // the common case: a batch of one session
		return groups[0].inputs
	}
	n := 0
	for _, g := range groups {
		n += len(g.inputs)
	}
	out := make([]turnengine.Input, 0, n)
	for _, g := range groups {
		out = append(out, g.inputs...)
	}
	return out
}
