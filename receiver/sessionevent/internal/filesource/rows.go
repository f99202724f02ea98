package filesource

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// arenaRows is how many rows a read decodes into its arena before
// resetting it (handleRow).
const arenaRows = 64

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
