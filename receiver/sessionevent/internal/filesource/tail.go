package filesource

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Reading one tailed file: what it gained since the last poll is cut into
// rows (plain.go: at newlines; zstd.go: frame by frame), each row is
// judged against the file's pending checkpoint and batched (rows.go), and
// each batch is delivered before its checkpoint is committed (batch.go).

const (
	// idleEvict drops the in-memory reader of a file that did not grow for
	// so long; it is rebuilt by re-reading when the file grows again.
	idleEvict = 10 * time.Minute
	// maxBackoff bounds the wait after a refused delivery.
	maxBackoff = 30 * time.Second
)

// fileArenas are the arenas the reads of files borrow (readGrowth): one
// per read under way, not one per file.
var fileArenas = sync.Pool{New: func() any { return new(sessionlog.Arena) }}

// read reads what a file gained since the last poll and delivers it. An
// unchanged file costs one stat.
func (t *Source) read(ctx context.Context, tf *tailedFile) {
	now := time.Now()
	if now.Before(tf.retryAt) {
		return
	}
	if tf.unsaved && t.store(ctx, tf) != nil {
		t.wait(tf)
		return
	}
	size, ok := t.stat(tf)
	if !ok || tf.dead || !tf.grew(size, now) {
		return
	}
	f, err := os.Open(tf.path)
	if err != nil {
		t.logger.Debug("Cannot open a session file", zap.String("file", tf.path), zap.Error(err))
		return
	}
	defer f.Close()
	if tf.cp.Rewritten(f) {
		t.restart(tf, size)
	}
	tf.seenSize, tf.lastGrowth = size, now
	if tf.live == nil {
		tf.live = t.resume(tf.cp)
	}
	if err := t.readGrowth(ctx, tf, f, size); err != nil {
		if errors.Is(err, errUnsaved) {
			t.wait(tf) // delivered: the reader carries on once the checkpoint is stored
			return
		}
		t.retryLater(ctx, tf, err)
		return
	}
	tf.backoff = 0
}

// wait makes the file wait before its next try, the wait doubling up to
// maxBackoff.
func (t *Source) wait(tf *tailedFile) {
	tf.backoff = min(max(2*tf.backoff, t.cfg.PollInterval), maxBackoff)
	tf.retryAt = time.Now().Add(tf.backoff)
}

// stat returns the file's size (ok false: gone or unreadable, dropped or
// retried by the next poll). A file that is no longer the one its
// checkpoint describes — another inode, shorter than what was read — is
// first made to be read again from its start.
func (t *Source) stat(tf *tailedFile) (size int64, ok bool) {
	fi, err := os.Stat(tf.path)
	if err != nil {
		return 0, false
	}
	size, id := fi.Size(), checkpoint.FileID(fi)
	if tf.cp.ID != "" && id != "" && id != tf.cp.ID || size < tf.cp.Offset || tf.live != nil && size < tf.live.pos {
		t.restart(tf, size)
	}
	tf.cp.ID = id
	return size, true
}

// grew reports whether the file has bytes not read yet. The reader of a
// file that did not grow for idleEvict is dropped.
func (tf *tailedFile) grew(size int64, now time.Time) bool {
	if size != tf.seenSize && (tf.live != nil || size != tf.cp.Offset) {
		return true
	}
	if tf.live != nil && now.Sub(tf.lastGrowth) > idleEvict {
		tf.live = nil // rebuilt by re-reading when the file grows again
	}
	return false
}

// resume is a new reader of a file at its start, which replays the rows
// delivered before cp (they only move the decoder and the tracker) and
// commits from cp on.
func (t *Source) resume(cp checkpoint.Checkpoint) *liveState {
	// A shallow decode: the file transport only places each row's events
	// and hands the row on (the connector decodes it whole).
	dec := sessionlog.NewRowDecoder(t.maxLine, 0)
	dec.SetShallow(true)
	return &liveState{
		dec:         dec,
		tracker:     logrecord.NewTracker(t.bounds),
		replayUntil: cp.Offset,
		pending:     cp.Clone(),
		scratch:     plog.NewLogRecordSlice(),
	}
}

// readGrowth reads from the reader's position to size, decoding into an
// arena borrowed for the read: the files waiting for their next growth
// hold none.
func (t *Source) readGrowth(ctx context.Context, tf *tailedFile, f *os.File, size int64) error {
	live := tf.live
	live.arena = fileArenas.Get().(*sessionlog.Arena)
	live.dec.SetArena(live.arena)
	var err error
	if tf.zstd {
		err = t.readZstd(ctx, tf, f, size)
	} else {
		err = t.readPlain(ctx, tf, f, size)
	}
	live.dec.SetArena(nil)
	live.arena.Reset()
	fileArenas.Put(live.arena)
	live.arena, live.arenaRows = nil, 0
	return err
}

// retryLater handles a refused delivery (or a shutdown): nothing was
// committed, so the reader is rebuilt from the checkpoint on the next try,
// after a backoff that doubles up to maxBackoff.
func (t *Source) retryLater(ctx context.Context, tf *tailedFile, err error) {
	tf.live, tf.seenSize = nil, -1
	if ctx.Err() != nil {
		return
	}
	t.wait(tf)
	t.refusing.Strike(err, zap.String("file", tf.path))
	t.logger.Debug("Delivery refused; will retry", zap.String("file", tf.path), zap.Duration("backoff", tf.backoff), zap.Error(err))
}

// restart makes a file that is no longer the one its checkpoint describes
// — shorter than what was read, another inode, other bytes before the
// offset — be read again from its start; rows up to the highest seq
// already emitted are dropped as duplicates.
func (t *Source) restart(tf *tailedFile, size int64) {
	t.logger.Info("Session file was truncated or rewritten; reading it again from the start (rows already delivered are dropped by seq)",
		zap.String("file", tf.path), zap.Int64("size", size), zap.Int64("offset", tf.cp.Offset))
	tf.cp.Offset, tf.cp.Tail = 0, nil
	tf.live, tf.dead, tf.seenSize = nil, false, -1
}
