package replay

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// The page shows every row as read, one click away. Kept as they came, a
// long session's rows would cost the whole log in memory once more; the
// page keeps them compressed instead (s2, a fraction of the log), in
// frames of consecutive rows. A block's rows are written in log order, so
// the renderer inflates each frame about once.

// rawFrame is the uncompressed size a frame is sealed at (a longer row
// makes a frame of its own).
const rawFrame = 256 << 10

// rawRows holds the rows' bytes: frames sealed, compressed, and the one
// being filled. Once sealed (Build's end) it is only read, by any number
// of renderings at once.
type rawRows struct {
	frames  [][]byte
	open    []byte
	scratch []byte
}

// rawRef finds a row's bytes: frame (from 1; 0: the page keeps none of the
// row), offset and length in it.
type rawRef struct {
	frame  int32
	off, n uint32
}

// kept reports whether the page keeps the row's bytes.
func (r rawRef) kept() bool { return r.frame > 0 }

// add keeps a row's bytes (a copy: the decoder reuses them).
func (s *rawRows) add(b []byte) rawRef {
	if len(s.open) > 0 && len(s.open)+len(b) > rawFrame {
		s.seal()
	}
	ref := rawRef{frame: int32(len(s.frames) + 1), off: uint32(len(s.open)), n: uint32(len(b))}
	s.open = append(s.open, b...)
	return ref
}

// seal compresses the open frame.
func (s *rawRows) seal() {
	if len(s.open) == 0 {
		return
	}
	s.scratch = s2.Encode(s.scratch[:cap(s.scratch)], s.open)
	s.frames = append(s.frames, bytes.Clone(s.scratch)) // Encode's buffer is sized for the worst case
	s.open = s.open[:0]
}

// done seals the last frame and lets go of the buffers.
func (s *rawRows) done() {
	s.seal()
	s.open, s.scratch = nil, nil
}

// rawReader reads rows back, one inflated frame at a time (one reader per
// rendering worker). The first failure sticks: a frame this package wrote
// does not fail to inflate short of corrupt memory, but if one did, the
// page must not go out without its rows.
type rawReader struct {
	rows  *rawRows
	frame int32
	buf   []byte
	err   error
}

// bytes are the row's bytes, valid until the next call; nil when the page
// keeps none.
func (r *rawReader) bytes(ref rawRef) []byte {
	switch {
	case !ref.kept() || r.err != nil:
		return nil
	case ref.n == 0:
		return []byte{} // an empty row, kept (it may close no frame)
	}
	if ref.frame != r.frame {
		if int(ref.frame) > len(r.rows.frames) {
			r.err = fmt.Errorf("row bytes: no frame %d of %d", ref.frame, len(r.rows.frames))
			return nil
		}
		buf, err := s2.Decode(r.buf[:cap(r.buf)], r.rows.frames[ref.frame-1])
		if err != nil {
			r.err = fmt.Errorf("row bytes: frame %d: %w", ref.frame, err)
			return nil
		}
		r.buf, r.frame = buf, ref.frame
	}
	if end := uint64(ref.off) + uint64(ref.n); end > uint64(len(r.buf)) {
		r.err = fmt.Errorf("row bytes: %d–%d outside frame %d of %d bytes", ref.off, end, ref.frame, len(r.buf))
		return nil
	}
	return r.buf[ref.off : ref.off+ref.n]
}
