package filesource

import (
	"bytes"
	"context"
	"os"
	"strconv"

	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

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
