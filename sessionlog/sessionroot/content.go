package sessionroot

import (
	"bytes"
	"io"
)

// CompleteEnd is where the complete content of a session file of readable
// size size ends (docs/format.md §2.5): after its last newline (plain), or
// after its last complete frame (zstd). What lies past it is a row or frame
// still being written, or a torn tail a crash left.
func CompleteEnd(r io.ReaderAt, size int64, zstd bool) (int64, error) {
	if !zstd {
		return LastLineEnd(r, size)
	}
	var off int64
	for off < size {
		n, complete, err := FrameSize(r, off, size)
		if err != nil || !complete {
			break
		}
		off += n
	}
	return off, nil
}

// LastLineEnd is the offset just after the last newline before size (0:
// there is none).
func LastLineEnd(r io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := r.ReadAt(chunk, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}
