package sessionroot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A dsh .jsonl.zstd file is a concatenation of independent Zstandard
// frames, each one durable append batch of whole rows (docs/format.md §2.4).
// FrameSize walks a frame's header and block headers (the zstd frame
// format, RFC 8878 section 3.1) to learn its compressed size without
// decompressing anything, so readers and writers can work frame by frame
// and checkpoint at frame boundaries.

// Magic starts every Zstandard frame (its magic number, little-endian).
var Magic = []byte{0x28, 0xB5, 0x2F, 0xFD}

// IsZstd reports whether b starts with a Zstandard frame's magic.
func IsZstd(b []byte) bool { return bytes.HasPrefix(b, Magic) }

const (
	zstdFrameMagic = 0xFD2FB528
	skippableMagic = 0x184D2A50 // … 0x184D2A5F
	skippableMask  = 0xFFFFFFF0
	// MaxFrameSize bounds a frame: a larger one is treated as corrupt.
	MaxFrameSize = 256 << 20 // a frame larger than this is treated as corrupt
)

// ErrNotFrame: the bytes at the offset start no zstd frame.
var ErrNotFrame = errors.New("no zstd frame starts here")

// FrameSize returns the compressed size of the frame starting at off in r,
// whose readable size is size. complete is false when the frame runs past
// size: it is still being written (or torn), not corrupt.
func FrameSize(r io.ReaderAt, off, size int64) (n int64, complete bool, err error) {
	fr := frameReader{r: r, size: size}
	b, ok, err := fr.read(off, 4)
	if err != nil || !ok {
		return 0, false, err
	}
	magic := binary.LittleEndian.Uint32(b)
	if magic&skippableMask == skippableMagic {
		b, ok, err := fr.read(off+4, 4)
		if err != nil || !ok {
			return 0, false, err
		}
		n := 8 + int64(binary.LittleEndian.Uint32(b))
		return n, off+n <= size, nil
	}
	if magic != zstdFrameMagic {
		return 0, false, ErrNotFrame
	}
	first, checksum, ok, err := fr.header(off)
	if err != nil || !ok {
		return 0, false, err
	}
	end, ok, err := fr.blocks(off, first)
	if err != nil || !ok {
		return 0, false, err
	}
	if checksum {
		end += 4
	}
	return end - off, end <= size, nil
}

// frameReader reads the headers of one frame; ok is false where they run
// past size (the frame is incomplete).
type frameReader struct {
	r    io.ReaderAt
	size int64
	buf  [4]byte
}

func (fr *frameReader) read(at int64, k int) ([]byte, bool, error) {
	if at+int64(k) > fr.size {
		return nil, false, nil
	}
	if _, err := fr.r.ReadAt(fr.buf[:k], at); err != nil {
		return nil, false, err
	}
	return fr.buf[:k], true, nil
}

// header reads the frame header of the frame at off: where its first block
// starts and whether a checksum follows its last.
func (fr *frameReader) header(off int64) (firstBlock int64, checksum, ok bool, err error) {
	b, ok, err := fr.read(off+4, 1)
	if err != nil || !ok {
		return 0, false, ok, err
	}
	fhd := b[0]
	if fhd&0x08 != 0 {
		return 0, false, false, fmt.Errorf("zstd frame header has its reserved bit set")
	}
	fcsFlag := fhd >> 6
	single := fhd&0x20 != 0
	didSize := [4]int64{0, 1, 2, 4}[fhd&3]
	fcsSize := [4]int64{0, 2, 4, 8}[fcsFlag]
	if fcsFlag == 0 && single {
		fcsSize = 1
	}
	pos := off + 5 + didSize + fcsSize
	if !single {
		pos++ // window descriptor
	}
	return pos, fhd&0x04 != 0, true, nil
}

// blocks walks the block headers of the frame at off from pos, returning
// the end of its last block.
func (fr *frameReader) blocks(off, pos int64) (end int64, ok bool, err error) {
	for {
		b, ok, err := fr.read(pos, 3)
		if err != nil || !ok {
			return 0, false, err
		}
		h := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16
		last := h&1 != 0
		bsize := int64(h >> 3)
		switch (h >> 1) & 3 {
		case 0, 2: // raw, compressed
			pos += 3 + bsize
		case 1: // RLE
			pos += 3 + 1
		default:
			return 0, false, fmt.Errorf("zstd block of reserved type at offset %d", pos)
		}
		if pos-off > MaxFrameSize {
			return 0, false, fmt.Errorf("zstd frame at offset %d exceeds %d bytes", off, MaxFrameSize)
		}
		if pos > fr.size {
			return 0, false, nil
		}
		if last {
			return pos, true, nil
		}
	}
}

// Frame is one complete frame of a zstd file: its offset and compressed
// length.
type Frame struct{ Off, N int64 }

// Frames lists the complete frames at the start of r (of readable size
// size), stopping at the first incomplete or unrecognized one.
func Frames(r io.ReaderAt, size int64) []Frame {
	var out []Frame
	for off := int64(0); off < size; {
		n, complete, err := FrameSize(r, off, size)
		if err != nil || !complete {
			break
		}
		out = append(out, Frame{off, n})
		off += n
	}
	return out
}

// NextFrame finds the next frame magic at or after off: where reading can
// resume past undecodable bytes.
func NextFrame(r io.ReaderAt, off, size int64) (int64, bool) {
	buf := make([]byte, 64<<10)
	for off < size {
		n, _ := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n == 0 {
			break
		}
		if i := bytes.Index(buf[:n], Magic); i >= 0 {
			return off + int64(i), true
		}
		if n < len(Magic) {
			break
		}
		off += int64(n - len(Magic) + 1)
	}
	return 0, false
}
