package turnstate

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/journal"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// decoder reads batches of log records into engine inputs: the record
// reader (the sessions' decoders) and the order of the decoded batches.
// Its lock is a leaf: consume decodes a batch holding it alone, while the
// engine may still be busy with the batch before (under passMu and mu);
// each batch is then applied in the order it was decoded (applied).
type decoder struct {
	logger *zap.Logger
	tel    *metadata.Telemetry
	// scratch holds the memory of the batches consume decodes outside mu,
	// at most cap(scratch) at once (the bound of the decoded rows kept).
	scratch chan *decoded

	mu     sync.Mutex // a leaf: guards the three below
	reader *logrecord.Reader
	serial decoded // read's memory
	// applied is closed when the batch decoded last has been applied (or
	// refused): the next one waits for it, so batches reach the engine in
	// the order they were decoded in.
	applied chan struct{}
}

func newDecoder(maxSessions int, logger *zap.Logger, tel *metadata.Telemetry) *decoder {
	d := &decoder{logger: logger, tel: tel, reader: logrecord.NewReader(maxSessions)}
	// As many as the file transport's readers (GOMAXPROCS+1): none of them
	// waits for a scratch while the batches before its own are applied,
	// so the CPUs are kept busy reading and decoding meanwhile.
	d.scratch = make(chan *decoded, runtime.GOMAXPROCS(0)+1)
	for range cap(d.scratch) {
		d.scratch <- new(decoded)
	}
	return d
}

// next decodes a batch into scratch memory, beside the pass of the batch
// before: prev is closed when that one is applied, and the caller closes
// applied (done) when this one is.
func (in *decoder) next(ctx context.Context, ld plog.Logs, keep map[string]*journal.Kept) (d *decoded, prev <-chan struct{}, applied chan struct{}) {
	d = <-in.scratch
	in.mu.Lock()
	defer in.mu.Unlock()
	in.decode(ctx, ld, d, keep, false)
	p := in.applied
	in.applied = make(chan struct{})
	return d, p, in.applied
}

// done returns a batch's memory once it is applied.
func (in *decoder) done(d *decoded, applied chan struct{}) {
	close(applied)
	in.scratch <- d
}

// forget drops what the reader knows of a session.
func (in *decoder) forget(id string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.reader.Forget(id)
}

// read decodes a batch into the decoder's own memory, as decode
// describes: the result is valid until the next read. Callers hold the
// core's mu (read serves the passes that apply what they decode).
func (in *decoder) read(ctx context.Context, ld plog.Logs, keep map[string]*journal.Kept, restoring bool) *decoded {
	in.mu.Lock()
	defer in.mu.Unlock()
	d := &in.serial
	in.decode(ctx, ld, d, keep, restoring)
	return d
}

// decoded is one batch read into engine inputs, in memory of its own (the
// rows' arena, the input buffers): a batch can be decoded while the engine
// still works on the one before (consume), and its inputs stay valid until
// the decoded is read into again.
type decoded struct {
	arena      sessionlog.Arena
	buf        readBuf
	inputs     []turnengine.Input
	violations []string // the codes of the rows' decoding problems, in order
}

// decode reads ld into d: records that are no session event or cannot be
// decoded are counted and skipped, and each session's events are sorted
// by seq — a cheap reordering that spares the engine's reorder window.
// The decoding problems are left in d.violations for the caller to count
// with the engine (unless restoring). With keep, the records are also
// filed by session for the journal (journal.KeepRecord). restoring: the
// records come from the journal and were counted when they first arrived,
// so nothing is counted again. Callers hold in.mu.
func (in *decoder) decode(ctx context.Context, ld plog.Logs, d *decoded, keep map[string]*journal.Kept, restoring bool) {
	rb := &d.buf
	rb.reset()
	d.violations = d.violations[:0]
	// The sessions of records that name no client are the batch's
	// client's (an authenticated receiver's context; none when restoring:
	// the journal's records name theirs).
	in.reader.SetClient(logrecord.ClientFromContext(ctx))
	var notSession, invalid int64
	in.reader.ReadBatchIn(ld, &d.arena, func(res pcommon.Resource, lr plog.LogRecord, rec logrecord.Record, err error) {
		if errors.Is(err, logrecord.ErrNotSession) {
			notSession++
			return
		}
		if err != nil {
			invalid++
			in.logger.Debug("Undecodable session record", zap.Error(err))
			return
		}
		if !restoring {
			for _, p := range rec.Row.Problems {
				d.violations = append(d.violations, p.Code)
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
			journal.KeepRecord(keep, rec, res, lr)
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
		in.tel.AddDropped(ctx, metadata.ReasonNotSession, notSession)
		in.tel.AddDropped(ctx, metadata.ReasonInvalid, invalid)
	}
	d.inputs = rb.inSeqOrder()
}

// inSeqOrder is the batch's inputs session by session, each session's in
// seq order (valid until the buffer is read into again).
func (rb *readBuf) inSeqOrder() []turnengine.Input {
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

// readBuf is a decoded's input buffers, reused from batch to batch like
// its rows (valid until it is read into again): a batch's inputs grouped
// by session in the order the sessions first appear, and their
// concatenation.
type readBuf struct {
	groups    []*inputGroup
	n         int // groups[:n] are this batch's
	bySession map[string]*inputGroup
	out       []turnengine.Input
	// last is the group found last: a batch's records mostly come a
	// session at a time.
	last *inputGroup
}

type inputGroup struct {
	session string // a view into the batch's records, valid while it is read
	inputs  []turnengine.Input
}

func (rb *readBuf) reset() {
	for _, g := range rb.groups[:rb.n] {
		clear(g.inputs) // no pointer into the last batch's rows stays
		g.inputs = g.inputs[:0]
		g.session = ""
	}
	clear(rb.out)
	rb.n, rb.last = 0, nil
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
	if g := rb.last; g != nil && g.session == session {
		return g
	}
	if g := rb.bySession[session]; g != nil {
		rb.last = g
		return g
	}
	if rb.n == len(rb.groups) {
		rb.groups = append(rb.groups, &inputGroup{})
	}
	g := rb.groups[rb.n]
	g.session = session
	rb.n++
	rb.bySession[session] = g
	rb.last = g
	return g
}
