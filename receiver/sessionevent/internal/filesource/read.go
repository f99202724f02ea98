package filesource

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// Reading one tailed file: what it gained since the last poll is cut into
// rows (plain: at newlines; zstd: frame by frame), each row is judged
// against the file's pending checkpoint and batched, and each batch is
// delivered before its checkpoint is committed (flush).

const (
	// batchRows and batchBytes bound one delivery.
	batchRows  = 1000
	batchBytes = 4 << 20
	// idleEvict drops the in-memory reader of a file that did not grow for
	// so long; it is rebuilt by re-reading when the file grows again.
	idleEvict = 10 * time.Minute
	// maxBackoff bounds the wait after a refused delivery.
	maxBackoff = 30 * time.Second
)

// tailedFile is one file being tailed.
type tailedFile struct {
	path string
	zstd bool
	// cp is the committed checkpoint.
	cp   checkpoint.Checkpoint
	live *liveState
	// seenSize is the size at the last read.
	seenSize   int64
	lastGrowth time.Time
	retryAt    time.Time
	backoff    time.Duration
	// dead: the file needs a newer reader (unsupported version); it is
	// read again only once rewritten.
	dead bool
	// garbageAt is the offset of the undecodable bytes last reported.
	garbageAt int64
}

// liveState is the in-memory reader of a file: the decoder's and the
// tracker's state at pos, and the checkpoint the next delivery commits.
type liveState struct {
	dec *sessionlog.RowDecoder
	// arena holds the rows being handled while a read of the file is under
	// way (borrowed from fileArenas for it): a row is done with once it is
	// handled (handleRow), so the arena is reset every arenaRows rows (one
	// reset per row cost more than the clearing it does) and when the read
	// ends. arenaRows counts the rows in it.
	arena     *sessionlog.Arena
	arenaRows int
	tracker   *logrecord.Tracker
	line      int
	pos       int64
	// replayUntil: rows ending at or before it were delivered before; they
	// only feed the decoder and the tracker.
	replayUntil int64
	skipping    bool
	carry       []byte
	carryFrom   int64
	pending     checkpoint.Checkpoint
	// scratch receives the records of rows only followed, never sent.
	scratch plog.LogRecordSlice
	// owned holds the wrapped rows' session ids as strings of their own,
	// lastOwned the one met last (own).
	owned     map[string]string
	lastOwned string
}

// read reads what a file gained since the last poll and delivers it. An
// unchanged file costs one stat.
func (t *Source) read(ctx context.Context, tf *tailedFile) {
	now := time.Now()
	if now.Before(tf.retryAt) {
		return
	}
	fi, err := os.Stat(tf.path)
	if err != nil {
		return // gone or unreadable: dropped or retried by the next poll
	}
	size, id := fi.Size(), checkpoint.FileID(fi)
	if tf.cp.ID != "" && id != "" && id != tf.cp.ID || size < tf.cp.Offset || tf.live != nil && size < tf.live.pos {
		t.restart(tf, size)
	}
	tf.cp.ID = id
	if tf.dead {
		return
	}
	if size == tf.seenSize || tf.live == nil && size == tf.cp.Offset {
		if tf.live != nil && now.Sub(tf.lastGrowth) > idleEvict {
			tf.live = nil // rebuilt by re-reading when the file grows again
		}
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
		// A shallow decode: the file transport only places each row's
		// events and hands the row on (the connector decodes it whole).
		dec := sessionlog.NewRowDecoder(t.maxLine, 0)
		dec.SetShallow(true)
		tf.live = &liveState{
			dec:         dec,
			tracker:     logrecord.NewTracker(16),
			replayUntil: tf.cp.Offset,
			pending:     tf.cp.Clone(),
			scratch:     plog.NewLogRecordSlice(),
		}
	}
	// The rows of this read are decoded into an arena it borrows: the
	// files waiting for their next growth hold none.
	live := tf.live
	live.arena = fileArenas.Get().(*sessionlog.Arena)
	live.dec.SetArena(live.arena)
	var readErr error
	if tf.zstd {
		readErr = t.readZstd(ctx, tf, f, size)
	} else {
		readErr = t.readPlain(ctx, tf, f, size)
	}
	live.dec.SetArena(nil)
	live.arena.Reset()
	fileArenas.Put(live.arena)
	live.arena, live.arenaRows = nil, 0
	if readErr != nil {
		// Delivery refused (or shutting down): nothing was committed. The
		// reader is rebuilt from the checkpoint on the next try.
		tf.live, tf.seenSize = nil, -1
		if ctx.Err() == nil {
			tf.backoff = min(max(2*tf.backoff, t.cfg.PollInterval), maxBackoff)
			tf.retryAt = time.Now().Add(tf.backoff)
			t.logger.Warn("Delivery refused; will retry", zap.String("file", tf.path), zap.Duration("backoff", tf.backoff), zap.Error(readErr))
		}
		return
	}
	tf.backoff = 0
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

// arenaRows is how many rows a read decodes into its arena before
// resetting it.
const arenaRows = 64

// fileArenas are the arenas the reads of files borrow (read): one per read
// under way, not one per file.
var fileArenas = sync.Pool{New: func() any { return new(sessionlog.Arena) }}

// plainChunk is the most a read of a plain file takes from it at once
// (more only for a row that does not fit).
const plainChunk = 256 << 10

// readPlain reads complete lines from live.pos to size. The file is read
// into memory of its own, a chunk at a time, and each line is handed on as
// a view into its chunk, not copied: a chunk is never written again once
// read (the start of a line it cuts off is copied into the next one), so
// the rows own their bytes as sessionlog.Row says, and a chunk lives as
// long as a row of it.
func (t *Source) readPlain(ctx context.Context, tf *tailedFile, f *os.File, size int64) error {
	live := tf.live
	readTo := live.pos // buf ends at this offset of the file
	batch := t.newFileBatch()
	committed := live.pos // the last line boundary
	var buf []byte        // buf[off:] is read and not yet cut into lines
	off := 0
	for {
		i := bytes.IndexByte(buf[off:], '\n')
		if i < 0 {
			// No newline in what was read: read on after it.
			rest := buf[off:]
			if !live.skipping && len(rest) > t.maxLine {
				live.skipping = true
				live.line++
				if live.pos+int64(len(rest)) > live.replayUntil {
					t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
				}
			}
			if live.skipping {
				live.pos += int64(len(rest))
				rest = nil
			}
			left := size - readTo
			if left <= 0 {
				// EOF: the unterminated rest waits for its newline.
				return t.flush(ctx, tf, f, batch, committed)
			}
			n := int64(min(plainChunk, left))
			if r := int64(len(rest)); r >= plainChunk/2 {
				n = min(max(n, r), left) // a long row: double the room
			}
			next := make([]byte, int64(len(rest))+n)
			copy(next, rest)
			k, err := f.ReadAt(next[len(rest):], readTo)
			if k == 0 {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				t.logger.Debug("Cannot read a session file", zap.String("file", tf.path), zap.Error(err))
				return t.flush(ctx, tf, f, batch, committed) // read on at the next poll
			}
			readTo += int64(k)
			buf, off = next[:len(rest)+k], 0
			continue
		}
		line := buf[off : off+i : off+i]
		off += i + 1
		live.pos += int64(i + 1)
		switch {
		case live.skipping:
			live.skipping = false // the end of a row too long
		case i > t.maxLine:
			live.line++
			if live.pos > live.replayUntil {
				t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
			}
		default:
			live.line++
			if stop := t.handleRow(ctx, tf, line, live.pos <= live.replayUntil, batch); stop {
				return t.flush(ctx, tf, f, batch, committed)
			}
		}
		committed = live.pos
		if batch.full() {
			if err := t.flush(ctx, tf, f, batch, committed); err != nil {
				return err
			}
			batch = t.newFileBatch()
		}
	}
}

// readZstd decodes complete frames from live.pos to size; an incomplete
// last frame waits. Batches are flushed only at frame boundaries no row
// continues past.
func (t *Source) readZstd(ctx context.Context, tf *tailedFile, f *os.File, size int64) error {
	live := tf.live
	batch := t.newFileBatch()
	for live.pos < size && ctx.Err() == nil {
		n, complete, err := sessionroot.FrameSize(f, live.pos, size)
		if err != nil {
			if !t.skipGarbage(ctx, tf, f, size, err) {
				break // wait: more bytes may bring the next frame
			}
			continue
		}
		if !complete {
			break // the frame being written (or a torn tail): wait for the rest
		}
		frame := make([]byte, n)
		if _, err := f.ReadAt(frame, live.pos); err != nil {
			break // retried next poll
		}
		start := live.pos
		live.pos += n
		replay := live.pos <= live.replayUntil
		data, err := t.zd.DecodeAll(frame, nil)
		if err != nil {
			if !replay {
				t.reject(ctx, tf, live.line+1, -1, "CORRUPT_ZSTD", "undecodable zstd frame at offset "+strconv.FormatInt(start, 10)+": "+err.Error())
			}
			continue
		}
		if len(live.carry) == 0 && !live.skipping {
			live.carryFrom = start
		}
		if stop := t.frameRows(ctx, tf, data, replay, batch); stop {
			return t.flush(ctx, tf, f, batch, boundary(live))
		}
		if len(live.carry) == 0 && !live.skipping && batch.full() {
			if err := t.flush(ctx, tf, f, batch, live.pos); err != nil {
				return err
			}
			batch = t.newFileBatch()
		}
	}
	return t.flush(ctx, tf, f, batch, boundary(live))
}

// skipGarbage passes over undecodable bytes at live.pos (cause: why no
// frame starts there): they are reported once per offset (not while
// replaying), and live.pos moves to the next frame magic. It returns false,
// leaving live.pos, when no magic follows yet.
func (t *Source) skipGarbage(ctx context.Context, tf *tailedFile, f *os.File, size int64, cause error) bool {
	live := tf.live
	next, found := sessionroot.NextFrame(f, live.pos+1, size)
	if tf.garbageAt != live.pos {
		tf.garbageAt = live.pos
		if live.pos >= live.replayUntil {
			t.reject(ctx, tf, live.line+1, -1, "CORRUPT_ZSTD", "undecodable bytes at offset "+strconv.FormatInt(live.pos, 10)+": "+cause.Error())
		}
	}
	if !found {
		return false
	}
	live.pos = next
	return true
}

// frameRows cuts one decoded frame into rows and hands each to handleRow.
// A row that continues past the frame is carried into the next one
// (live.carry); a row longer than max_line_bytes is counted once and
// skipped up to its newline, however many frames it spans. stop is
// handleRow's: the file cannot be read on.
func (t *Source) frameRows(ctx context.Context, tf *tailedFile, data []byte, replay bool, batch *fileBatch) (stop bool) {
	live := tf.live
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !live.skipping {
				live.carry = append(live.carry, data...)
				if len(live.carry) > t.maxLine {
					live.skipping, live.carry = true, nil
					live.line++
					if !replay {
						t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
					}
				}
			}
			return false
		}
		seg := data[:i]
		data = data[i+1:]
		if live.skipping {
			live.skipping = false
			continue
		}
		line := append(live.carry, seg...)
		live.carry = nil
		if len(line) > t.maxLine {
			live.line++
			if !replay {
				t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
			}
			continue
		}
		live.line++
		if t.handleRow(ctx, tf, bytes.Clone(line), replay, batch) {
			return true
		}
	}
	return false
}

// boundary is the offset a zstd checkpoint may take: after the last frame,
// unless a row continues past it (then the start of the frame it began in:
// re-read rows are dropped by seq).
func boundary(live *liveState) int64 {
	if len(live.carry) > 0 || live.skipping {
		return live.carryFrom
	}
	return live.pos
}

// handleRow decodes one row and adds its record to the batch, unless it
// was delivered before (replay, or a seq already emitted) or is corrupt.
// stop is true when the file cannot be read on (unsupported version).
func (t *Source) handleRow(ctx context.Context, tf *tailedFile, b []byte, replay bool, batch *fileBatch) (stop bool) {
	live := tf.live
	if len(bytes.TrimSpace(b)) == 0 {
		return false
	}
	if live.arenaRows++; live.arenaRows > arenaRows {
		live.arena.Reset() // the rows before are handled: nothing of them is kept
		live.arenaRows = 1
	}
	row, err := live.dec.Decode(b, live.line)
	if err != nil {
		if !replay {
			var uv *sessionlog.UnsupportedVersionError
			reason := "UNSUPPORTED_VERSION"
			if !errors.As(err, &uv) {
				reason = "INVALID"
			}
			t.reject(ctx, tf, live.line, -1, reason, err.Error()+"; the file is not read on")
		}
		tf.dead = true
		return true
	}
	switch row.Kind {
	case sessionlog.RowOther:
	case sessionlog.RowInvalid:
		if !replay {
			v := sessionlog.Violation{Line: live.line, Seq: -1, Code: "INVALID", Message: "undecodable row"}
			if len(row.Problems) > 0 {
				v = row.Problems[0]
			}
			t.reject(ctx, tf, v.Line, v.Seq, v.Code, v.Message)
		}
	case sessionlog.RowHeader:
		t.handleHeader(ctx, tf, row, replay, batch)
	default:
		t.handleEvent(tf, row, replay, batch)
	}
	return false
}

// handleHeader emits the file's header row once: a misplaced header is
// rejected, a header emitted before (or replayed) only moves the tracker.
// The first header names the session of the file's bare rows.
func (t *Source) handleHeader(ctx context.Context, tf *tailedFile, row *sessionlog.Row, replay bool, batch *fileBatch) {
	live, p := tf.live, &tf.live.pending
	for _, v := range row.Problems {
		if v.Code == sessionlog.CodeHeaderMisplaced {
			if !replay {
				t.reject(ctx, tf, v.Line, v.Seq, v.Code, v.Message)
			}
			return
		}
	}
	if p.Session == "" {
		p.Session = row.Header.ID
		if p.Session == "" {
			p.Session = sessionroot.SessionOfFile(tf.path)
		}
	}
	f := live.dec.Format()
	if replay || p.Header {
		live.follow(p.Session, row, f)
		if !replay {
			batch.dups++
		}
		return
	}
	p.Header = true
	t.emit(tf, row, p.Session, f, batch)
}

// handleEvent emits an event or packed row whose seqs go past the highest
// seq emitted for its session; an older one (or a replayed one) only moves
// the tracker and counts as a duplicate. Either way the pending
// checkpoint's high-water mark covers it.
func (t *Source) handleEvent(tf *tailedFile, row *sessionlog.Row, replay bool, batch *fileBatch) {
	live, p := tf.live, &tf.live.pending
	f := live.dec.Format()
	var session string
	if row.Wrapper == sessionlog.WrapNone || row.SessionID == "" {
		if p.Session == "" {
			p.Session = sessionroot.SessionOfFile(tf.path)
		}
		session = p.Session
	} else {
		session = live.own(row.SessionID)
	}
	if emitted := p.Cover(session, row.FirstSeq(), row.LastSeq()); replay || emitted {
		live.follow(session, row, f)
		if !replay {
			batch.dups++
		}
		return
	}
	t.emit(tf, row, session, f, batch)
}

// own returns a wrapped row's session id as a string of its own: the id
// is a view into the row's file chunk, and the checkpoint's high-water
// marks would keep the chunk alive by it (a map assignment stores the key
// it is given, even for a key already there).
func (l *liveState) own(session string) string {
	if session == l.lastOwned {
		return l.lastOwned
	}
	k, ok := l.owned[session]
	if !ok {
		if l.owned == nil || len(l.owned) >= maxOwned {
			l.owned = map[string]string{}
		}
		k = strings.Clone(session)
		l.owned[k] = k
	}
	l.lastOwned = k
	return k
}

// maxOwned bounds liveState.owned: a file naming more sessions than this
// starts the set over (its ids are then copied again as they come).
const maxOwned = 1024

// follow moves the tracker past a row that is not emitted again.
func (l *liveState) follow(session string, row *sessionlog.Row, f sessionlog.Format) {
	if l.scratch.Len() >= 64 {
		l.scratch = plog.NewLogRecordSlice()
	}
	l.tracker.Append(l.scratch, session, row, f, time.Time{})
}

func (t *Source) emit(tf *tailedFile, row *sessionlog.Row, session string, f sessionlog.Format, batch *fileBatch) {
	tf.live.tracker.Append(batch.records(session), session, row, f, batch.observed)
	batch.n++
	batch.bytes += len(row.Bytes)
	if len(row.Problems) > 0 {
		v := row.Problems[0]
		t.logger.Debug("Session row with a violation delivered as is", zap.String("file", tf.path),
			zap.Int("line", v.Line), zap.Int64("seq", v.Seq), zap.String("code", v.Code), zap.String("message", v.Message))
	}
}

// reject logs and counts a row the file source skips.
func (t *Source) reject(ctx context.Context, tf *tailedFile, line int, seq int64, code, msg string) {
	t.logger.Warn("Skipping a corrupt session row", zap.String("file", tf.path), zap.Int("line", line),
		zap.Int64("seq", seq), zap.String("code", code), zap.String("message", msg))
	t.tel.RowsRejected(ctx, 1, strings.ToLower(code))
}

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
	if err := t.checkpoints.Save(ctx, tf.path, cp); err != nil {
		t.logger.Warn("Could not store a checkpoint; a restart may deliver these rows again", zap.String("file", tf.path), zap.Error(err))
	}
	return nil
}
