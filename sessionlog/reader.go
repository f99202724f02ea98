package sessionlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// readBufferSize is the read buffer: most rows fit; longer ones are
// gathered across reads up to MaxRowBytes.
const readBufferSize = 16 << 10

// Options configure a Decoder.
type Options struct {
	// MaxRowBytes is the longest row accepted; longer rows become a
	// ROW_TOO_LONG problem and are skipped without being held in memory.
	// Zero means DefaultMaxRowBytes.
	MaxRowBytes int
	// MaxDepth is the deepest JSON nesting accepted (zero: DefaultMaxDepth).
	MaxDepth int
	// DecodeUnterminated decodes a final row that lacks its newline (an
	// HTTP body, a hand-made file). By default such a row is a torn tail:
	// reported through Tail, not decoded, as dsh itself discards it.
	DecodeUnterminated bool
	// ReuseRows lets each Next reuse the memory of the row it returned
	// before, bytes included (an Arena, and one line buffer): a row is then
	// valid only until the next Next or Close, and whoever keeps an event longer
	// keeps a copy (Event.Own, with the bytes copied too). For callers that
	// are done with each row before reading the next.
	ReuseRows bool
}

// Tail describes a torn tail (docs/format.md §2.5): a final record without its newline or
// an incomplete final zstd frame. It is a crash or a write in progress, not
// corruption.
type Tail struct {
	// Line is the line number the torn record would have had.
	Line int
	// Bytes is the number of decompressed bytes left over.
	Bytes int
	// Frame is true when the compressed stream ended inside a frame.
	Frame bool
}

func (t *Tail) String() string {
	if t.Frame {
		return fmt.Sprintf("line %d: torn tail: incomplete final zstd frame (%d decoded bytes without newline)", t.Line, t.Bytes)
	}
	return fmt.Sprintf("line %d: torn tail: final record of %d bytes has no newline", t.Line, t.Bytes)
}

// Decoder reads a session log stream row by row: plain NDJSON or zstd
// frames (detected by their magic bytes), with or without a header, bare or
// in line wrappers. Memory is bounded by the longest row, not the stream.
type Decoder struct {
	opts       Options
	src        *bufio.Reader
	zr         *zstd.Decoder
	br         *bufio.Reader
	rows       *RowDecoder
	line       int
	offset     int64
	tail       *Tail
	done       bool
	compressed bool
	ownSrc     bool  // src is the Decoder's, not the caller's
	consumed   int64 // bytes the last readLine consumed, newline included

	// With ReuseRows: the rows' memory and the line buffer, taken from
	// reusables at the start and given back at the end of the stream.
	reuse *reusable
}

// reusable is the memory ReuseRows decoders hand from one stream to the
// next (a file after a file: the blocks stay warm).
type reusable struct {
	arena Arena
	line  []byte
}

var reusables = sync.Pool{New: func() any { return new(reusable) }}

// giveBack returns the stream's reusable memory, its last row done with.
func (d *Decoder) giveBack() {
	if d.reuse == nil {
		return
	}
	d.reuse.arena.Reset()
	if cap(d.reuse.line) > 1<<20 { // one long row does not pin its buffer
		d.reuse.line = nil
	}
	reusables.Put(d.reuse)
	d.reuse = nil
	d.rows.SetArena(nil)
}

// NewDecoder returns a Decoder reading r. It sniffs the first bytes for
// zstd; a corrupt compressed stream is reported by Next.
func NewDecoder(r io.Reader, opts Options) (*Decoder, error) {
	if opts.MaxRowBytes <= 0 {
		opts.MaxRowBytes = DefaultMaxRowBytes
	}
	d := &Decoder{opts: opts, rows: NewRowDecoder(opts.MaxRowBytes, opts.MaxDepth)}
	d.src, d.ownSrc = newReader(r)
	head, err := d.src.Peek(4)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if sessionroot.IsZstd(head) {
		zr, err := zstd.NewReader(d.src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(64<<20))
		if err != nil {
			return nil, err
		}
		d.zr = zr
		d.compressed = true
		d.br = bufio.NewReaderSize(zr, readBufferSize)
	} else {
		d.br = d.src
	}
	d.rows.tape = jsontape.Get() // the stream's rows are parsed on one tape, given back by finish
	if opts.ReuseRows {
		d.reuse = reusables.Get().(*reusable)
		d.rows.SetArena(&d.reuse.arena)
	}
	return d, nil
}

// readers are read buffers of finished plain streams, for new Decoders.
var readers sync.Pool

// newReader returns a read buffer over r and whether it is the Decoder's
// own (bufio.NewReaderSize returns r itself when r is a large enough
// *bufio.Reader; that one stays the caller's).
func newReader(r io.Reader) (*bufio.Reader, bool) {
	if _, ok := r.(*bufio.Reader); !ok {
		if br, ok := readers.Get().(*bufio.Reader); ok {
			br.Reset(r)
			return br, true
		}
	}
	br := bufio.NewReaderSize(r, readBufferSize)
	return br, br != r
}

// finish ends the stream: Next returns io.EOF from now on and reads and
// decodes nothing more, so the tape goes back to its pool and a plain
// stream's read buffer is kept for reuse (no row views it any more:
// without ReuseRows readLine copies the rows out, and with it the row
// returned before is done with by the Next that reaches the end; a row
// returned with a fatal error keeps the buffer, see next). A compressed stream's
// buffers stay with the zstd decoder, which reads from one of them.
func (d *Decoder) finish() {
	d.done = true
	if d.rows.tape != nil {
		jsontape.Put(d.rows.tape)
		d.rows.tape = nil
	}
	if d.zr == nil && d.ownSrc {
		d.src.Reset(nil)
		readers.Put(d.src)
		d.src, d.br, d.ownSrc = nil, nil, false
	}
}

// Close releases the zstd decoder, if any, and with ReuseRows the memory
// of the last row.
func (d *Decoder) Close() {
	d.giveBack()
	if d.zr != nil {
		d.zr.Close()
	}
}

// Compressed reports whether the input is zstd.
func (d *Decoder) Compressed() bool { return d.compressed }

// Format is the stream's format as known so far.
func (d *Decoder) Format() Format { return d.rows.Format() }

// Header is the header row's content, if the stream has one.
func (d *Decoder) Header() *Header { return d.rows.Header() }

// Tail is the torn tail found at the end of the input, if any. It is set
// once Next has returned io.EOF.
func (d *Decoder) Tail() *Tail { return d.tail }

// CorruptError is a compressed stream that cannot be decoded (not a torn
// tail: a checksum mismatch, an invalid frame).
type CorruptError struct {
	Line int
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("line %d: undecodable zstd stream: %v", e.Line, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Next returns the next row. It returns io.EOF at the end of input; other
// errors are fatal for the stream: I/O errors, *CorruptError and
// *UnsupportedVersionError. A row that is merely bad is returned with its
// Problems, and reading goes on.
func (d *Decoder) Next() (*Row, error) {
	if d.reuse != nil {
		d.reuse.arena.Reset() // the row returned before is done with
	}
	row, err := d.next()
	if row == nil && d.done {
		d.giveBack() // the end, and no row to keep valid
	}
	return row, err
}

func (d *Decoder) next() (*Row, error) {
	for !d.done {
		b, tooLong, err := d.readLine()
		if err != nil && err != io.EOF {
			return nil, d.readFailed(err)
		}
		if err == io.EOF && d.endsBefore(b, tooLong) {
			break
		}
		d.line++
		off := d.offset
		d.offset += d.consumed
		switch {
		case tooLong:
			r := &Row{Line: d.line, Offset: off, Kind: RowInvalid}
			r.problem(-1, CodeRowTooLong, fmt.Sprintf("row exceeds the limit of %d bytes", d.opts.MaxRowBytes))
			return r, nil
		case blank(b): // JSON whitespace only: \v, U+00A0 and the like are bad rows
			continue // blank lines carry nothing
		}
		row, err := d.rows.Decode(b, d.line)
		if row != nil {
			row.Offset = off
		}
		if err != nil {
			if d.reuse != nil {
				d.ownSrc = false // the row may view the read buffer: not pooled
			}
			d.finish()
		}
		return row, err
	}
	return nil, io.EOF
}

// readFailed ends the stream on a read error, and returns it: a compressed
// stream cut inside a frame is a torn tail (io.EOF), any other failure of
// one is corruption.
func (d *Decoder) readFailed(err error) error {
	d.finish()
	switch {
	case d.zr != nil && errors.Is(err, io.ErrUnexpectedEOF):
		d.tail = &Tail{Line: d.line + 1, Bytes: int(d.consumed), Frame: true}
		return io.EOF
	case d.zr != nil:
		return &CorruptError{Line: d.line + 1, Err: err}
	}
	return err
}

// endsBefore ends the stream at the end of the input, whose last line, b,
// had no newline, and reports whether no row is left: b is empty, or a
// torn tail (docs/format.md §2.5) that is not decoded.
func (d *Decoder) endsBefore(b []byte, tooLong bool) bool {
	d.finish()
	if len(b) == 0 && !tooLong {
		return true
	}
	if !d.opts.DecodeUnterminated {
		// consumed, not len(b): a torn record over the limit was dropped.
		d.tail = &Tail{Line: d.line + 1, Bytes: int(d.consumed)}
		return true
	}
	return false
}

// blank reports whether b is empty or only spaces, tabs and CRs.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// readLine returns the next line without its newline, as a fresh slice the
// caller owns; with ReuseRows, a view of the Decoder's read buffer when the
// whole line is in it and the buffer is the Decoder's own, else the
// stream's line buffer. A line over the limit is consumed and dropped
// (tooLong).
func (d *Decoder) readLine() (line []byte, tooLong bool, err error) {
	frag, err := d.br.ReadSlice('\n')
	d.consumed = int64(len(frag))
	if err == nil && len(frag) <= d.opts.MaxRowBytes+1 { // the common case: the whole line in one fragment
		return d.ownLine(frag), false, nil
	}
	return d.gatherLine(frag, err)
}

// ownLine is a whole line read, frag, without its newline, as readLine
// returns it.
func (d *Decoder) ownLine(frag []byte) []byte {
	switch {
	case d.reuse != nil && (d.br != d.src || d.ownSrc):
		// The read buffer is the Decoder's and is read again only by the
		// next Next, which ends the row's validity (ReuseRows): the row
		// views it.
		return frag[: len(frag)-1 : len(frag)-1]
	case d.reuse != nil:
		d.reuse.line = append(d.reuse.line[:0], frag[:len(frag)-1]...)
		return d.reuse.line
	}
	out := make([]byte, len(frag)-1)
	copy(out, frag)
	return out
}

// gatherLine reads the rest of a line whose first fragment, frag, did not
// end it (err says why), up to the limit.
func (d *Decoder) gatherLine(frag []byte, err error) (line []byte, tooLong bool, _ error) {
	var acc []byte
	if d.reuse != nil {
		acc = d.reuse.line[:0] // a line longer than the read buffer
		defer func() {
			if cap(acc) > cap(d.reuse.line) {
				d.reuse.line = acc[:0]
			}
		}()
	}
	for {
		if len(acc)+len(frag) > d.opts.MaxRowBytes+1 {
			tooLong, acc = true, nil
		}
		if !tooLong {
			acc = append(acc, frag...)
		}
		switch err {
		case nil:
			if tooLong {
				return nil, true, nil
			}
			return acc[:len(acc)-1], false, nil
		case bufio.ErrBufferFull:
			frag, err = d.br.ReadSlice('\n')
			d.consumed += int64(len(frag))
			continue
		}
		return acc, tooLong, err
	}
}
