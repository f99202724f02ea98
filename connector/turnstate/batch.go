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
	rb := &c.readBuf
	rb.reset()
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
		g := rb.group(rec.SessionID)
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
	groups := rb.groups[:rb.n]
	for _, g := range groups {
		if !slices.IsSortedFunc(g.inputs, bySeq) { // the common case: a source in order
			slices.SortStableFunc(g.inputs, bySeq)
		}
	}
	if len(groups) == 1 { // the common case: a batch of one session
		return groups[0].inputs
	}
	out := rb.out[:0]
	for _, g := range groups {
		out = append(out, g.inputs...)
	}
	rb.out = out
	return out
}

// readBuf is read's memory, reused from batch to batch like the rows the
// reader decodes (their events are valid until the next read as well):
// a batch's inputs grouped by session in the order the sessions first
// appear, and their concatenation.
type readBuf struct {
	groups    []*inputGroup
	n         int // groups[:n] are this batch's
	bySession map[string]*inputGroup
	out       []turnengine.Input
}

type inputGroup struct {
	inputs []turnengine.Input
}

func (rb *readBuf) reset() {
	for _, g := range rb.groups[:rb.n] {
		clear(g.inputs) // no pointer into the last batch's rows stays
		g.inputs = g.inputs[:0]
	}
	clear(rb.out)
	rb.n = 0
	if rb.bySession == nil {
		rb.bySession = map[string]*inputGroup{}
	}
	clear(rb.bySession)
	// A batch of many sessions leaves many groups: keep a bounded number.
	if len(rb.groups) > 1024 {
		rb.groups = rb.groups[:1024]
	}
}

func (rb *readBuf) group(session string) *inputGroup {
	if g := rb.bySession[session]; g != nil {
		return g
	}
	if rb.n == len(rb.groups) {
		rb.groups = append(rb.groups, &inputGroup{})
	}
	g := rb.groups[rb.n]
	rb.n++
	rb.bySession[session] = g
	return g
}
