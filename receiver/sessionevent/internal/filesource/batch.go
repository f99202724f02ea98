package filesource

import (
	"context"
	"errors"
	"os"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

const (
	// batchRows and batchBytes bound one delivery.
	batchRows  = 1000
	batchBytes = 4 << 20
)

// fileBatch is the records of one delivery.
type fileBatch struct {
	ld    plog.Logs
	lrs   map[string]plog.LogRecordSlice
	n     int
	bytes int
	dups  int
	// observed is the records' observed timestamp: when the batch was
	// begun (its rows are read within moments of each other).
	observed time.Time
	// last and lastLRS are the session whose records were added last and
	// where they go: a file's rows are almost always all of one session.
	last    string
	lastLRS plog.LogRecordSlice
	hasLast bool
}

func (t *Source) newFileBatch() *fileBatch {
	return &fileBatch{ld: plog.NewLogs(), lrs: map[string]plog.LogRecordSlice{}, observed: t.now()}
}

// records is where the batch's records of session go.
func (b *fileBatch) records(session string) plog.LogRecordSlice {
	if b.hasLast && session == b.last {
		return b.lastLRS
	}
	lrs, ok := b.lrs[session]
	if !ok {
		lrs = logrecord.NewResourceLogs(b.ld, metadata.ScopeName, session, nil)
		b.lrs[session] = lrs
	}
	b.last, b.lastLRS, b.hasLast = session, lrs, true
	return lrs
}

func (b *fileBatch) full() bool { return b.n >= batchRows || b.bytes >= batchBytes }

// errRefused: the next consumer refused a batch with a retryable error.
var errRefused = errors.New("delivery refused")

// flush delivers the batch and, once it was accepted, commits the
// checkpoint at offset. A retryable refusal commits nothing and returns
// errRefused; a permanent one is logged and counted, and the rows are
// passed over (retrying could never succeed).
func (t *Source) flush(ctx context.Context, tf *tailedFile, f *os.File, batch *fileBatch, offset int64) error {
	live := tf.live
	if batch.n > 0 {
		opCtx := t.obs.StartLogsOp(ctx)
		err := t.next.ConsumeLogs(opCtx, batch.ld)
		t.obs.EndLogsOp(opCtx, "jsonl", batch.n, err)
		switch {
		case err == nil:
			t.tel.RowsAccepted(ctx, int64(batch.n))
			t.refusing.Clear()
		case consumererror.IsPermanent(err):
			t.logger.Error("The pipeline refused session rows permanently; they are skipped", zap.String("file", tf.path),
				zap.Int("rows", batch.n), zap.Error(err))
			t.tel.RowsRejected(ctx, int64(batch.n), "downstream_permanent")
		default:
			return errors.Join(errRefused, err)
		}
	}
	if batch.dups > 0 {
		t.tel.RowsDuplicate(ctx, int64(batch.dups))
		batch.dups = 0
	}
	if offset <= tf.cp.Offset && batch.n == 0 && checkpoint.SameProgress(tf.cp, live.pending) {
		return nil
	}
	cp := live.pending.Clone()
	cp.Offset = max(offset, tf.cp.Offset)
	cp.ID = tf.cp.ID
	cp.KeepTail(f)
	t.tel.BytesRead(ctx, cp.Offset-tf.cp.Offset)
	tf.cp = cp
	return t.store(ctx, tf)
}

// errUnsaved: a delivered batch's checkpoint could not be stored; the
// file waits until it is.
var errUnsaved = errors.New("checkpoint not stored")

// store writes the file's committed checkpoint. A failure is counted, the
// file marked unsaved (read pauses it until a retry stores it), and
// errUnsaved returned.
func (t *Source) store(ctx context.Context, tf *tailedFile) error {
	if err := t.checkpoints.Save(ctx, tf.path, tf.cp); err != nil {
		tf.unsaved = true
		t.tel.StateWriteFailed(ctx)
		t.storing.Strike(err, zap.String("file", tf.path))
		return errors.Join(errUnsaved, err)
	}
	tf.unsaved = false
	t.storing.Clear()
	return nil
}
