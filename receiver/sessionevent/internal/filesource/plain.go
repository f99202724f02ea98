package filesource

import (
	"bytes"
	"context"
	"io"
	"os"

	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/sessionlog"
)

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
	in := plainInput{f: f, readTo: live.pos, size: size}
	batch := t.newFileBatch()
	committed := live.pos // the last line boundary
	for {
		line, ok := in.line()
		if !ok {
			// No newline in what was read: read on after it.
			t.carryPlain(ctx, tf, &in)
			more, err := in.fill()
			if err != nil {
				t.logger.Debug("Cannot read a session file", zap.String("file", tf.path), zap.Error(err))
			}
			if !more {
				// The unterminated rest waits for its newline (or the
				// next poll's read).
				return t.flush(ctx, tf, f, batch, committed)
			}
			continue
		}
		live.pos += int64(len(line) + 1)
		if stop := t.plainLine(ctx, tf, line, batch); stop {
			return t.flush(ctx, tf, f, batch, committed)
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

// plainLine handles one line of a plain file: the end of a row too long
// (skipped), a row too long whole (rejected), or a row. stop is
// handleRow's: the file cannot be read on.
func (t *Source) plainLine(ctx context.Context, tf *tailedFile, line []byte, batch *fileBatch) (stop bool) {
	live := tf.live
	switch {
	case live.skipping:
		live.skipping = false // the end of a row too long
	case len(line) > t.maxLine:
		live.line++
		if live.pos > live.replayUntil {
			t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
		}
	default:
		live.line++
		return t.handleRow(ctx, tf, line, live.pos <= live.replayUntil, batch)
	}
	return false
}

// carryPlain keeps the unterminated rest of what was read for the next
// chunk — unless it is already longer than a row may be: then the row is
// rejected once and skipped up to its newline, however many chunks it
// spans.
func (t *Source) carryPlain(ctx context.Context, tf *tailedFile, in *plainInput) {
	live := tf.live
	rest := in.rest()
	if !live.skipping && len(rest) > t.maxLine {
		live.skipping = true
		live.line++
		if live.pos+int64(len(rest)) > live.replayUntil {
			t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
		}
	}
	if live.skipping {
		live.pos += int64(len(rest))
		in.drop()
	}
}

// plainInput is a plain file read a chunk at a time up to size.
type plainInput struct {
	f *os.File
	// readTo is the offset buf ends at, size where the read stops.
	readTo, size int64
	// buf[off:] is read and not yet cut into lines.
	buf []byte
	off int
}

// line cuts the next line off what was read, without its newline (ok
// false: no newline in it).
func (in *plainInput) line() (line []byte, ok bool) {
	i := bytes.IndexByte(in.buf[in.off:], '\n')
	if i < 0 {
		return nil, false
	}
	line = in.buf[in.off : in.off+i : in.off+i]
	in.off += i + 1
	return line, true
}

// rest is what was read after the last newline.
func (in *plainInput) rest() []byte { return in.buf[in.off:] }

// drop forgets the rest.
func (in *plainInput) drop() { in.off = len(in.buf) }

// fill reads the next chunk into new memory after a copy of the rest
// (plainChunk, or twice the rest for a long row). more is false at size,
// or when nothing could be read (err says why).
func (in *plainInput) fill() (more bool, err error) {
	left := in.size - in.readTo
	if left <= 0 {
		return false, nil
	}
	rest := in.rest()
	n := int64(min(plainChunk, left))
	if r := int64(len(rest)); r >= plainChunk/2 {
		n = min(max(n, r), left) // a long row: double the room
	}
	next := make([]byte, int64(len(rest))+n)
	copy(next, rest)
	k, err := in.f.ReadAt(next[len(rest):], in.readTo)
	if k == 0 {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return false, err
	}
	in.readTo += int64(k)
	in.buf, in.off = next[:len(rest)+k], 0
	return true, nil
}
