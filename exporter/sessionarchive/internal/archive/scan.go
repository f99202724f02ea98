package archive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// fileInfo is what an archived file says about where to continue it.
type fileInfo struct {
	// size is the length of its complete content.
	size int64
	// header: the first row is a header, of version.
	header  bool
	version int
	// next is the seq after the last row (0 when there is none).
	next int64
	// truncated is the torn tail cut off, in bytes.
	truncated int64
}

// scanFile reads where an archived file ends — after its last complete
// row (plain) or frame (zstd) — cuts a torn tail off (docs/format.md §2.5: a
// crash or a write in progress), and reads its header and last seq. Only
// the first and last rows (frames) are decoded, unless the last row does
// not give a seq; then the whole file is.
func scanFile(path string) (fileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fileInfo{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fileInfo{}, err
	}
	size := fi.Size()
	head := make([]byte, 4)
	n, _ := f.ReadAt(head, 0)
	var info fileInfo
	if n == 4 && sessionroot.IsZstd(head) {
		info, err = scanZstd(f, size)
	} else {
		info, err = scanPlain(f, size)
	}
	if err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	if info.size < size {
		if err := f.Truncate(info.size); err != nil {
			return info, err
		}
		info.truncated = size - info.size
	}
	return info, nil
}

func scanPlain(f *os.File, size int64) (fileInfo, error) {
	end, err := sessionroot.LastLineEnd(f, size)
	if err != nil || end == 0 {
		return fileInfo{}, err
	}
	info := fileInfo{size: end}
	first, err := bufio.NewReaderSize(io.NewSectionReader(f, 0, end), 64<<10).ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		// A first row longer than the buffer is no header.
	case err != nil:
		return info, err
	default:
		if h := headerOf(first[:len(first)-1]); h != nil {
			info.header, info.version = true, h.Version
		}
	}
	start, err := lastLineStart(f, end)
	if err != nil {
		return info, err
	}
	if start == 0 && info.header {
		return info, nil // the header alone
	}
	last := make([]byte, end-1-start)
	if _, err := f.ReadAt(last, start); err != nil {
		return info, err
	}
	if seq, ok := lastSeq(last); ok {
		info.next = seq + 1
		return info, nil
	}
	return fullScan(io.NewSectionReader(f, 0, end), info)
}

// lastLineStart is the offset of the line that ends at end (end is just
// after its newline).
func lastLineStart(f *os.File, end int64) (int64, error) {
	nl, err := sessionroot.LastLineEnd(f, end-1)
	return nl, err
}

func headerOf(line []byte) *sessionlog.Header {
	row, err := sessionlog.NewRowDecoder(0, 0).Decode(append([]byte(nil), line...), 1)
	if err != nil || row.Kind != sessionlog.RowHeader {
		return nil
	}
	return row.Header
}

// lastSeq is the seq of the last event a row holds.
func lastSeq(line []byte) (int64, bool) {
	row, err := sessionlog.NewRowDecoder(0, 0).Decode(append([]byte(nil), line...), 1)
	if err != nil || len(row.Events) == 0 {
		return 0, false
	}
	return row.Events[len(row.Events)-1].Seq, true
}

// fullScan decodes a whole (complete) file for its highest seq.
func fullScan(r io.Reader, info fileInfo) (fileInfo, error) {
	dec, err := sessionlog.NewDecoder(r, sessionlog.Options{})
	if err != nil {
		return info, err
	}
	defer dec.Close()
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return info, nil
		}
		if err != nil {
			return info, err
		}
		for i := range row.Events {
			if s := row.Events[i].Seq; s+1 > info.next {
				info.next = s + 1
			}
		}
	}
}

func scanZstd(f *os.File, size int64) (fileInfo, error) {
	frames := sessionroot.Frames(f, size)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return fileInfo{}, err
	}
	defer dec.Close()
	decode := func(fr sessionroot.Frame) ([]byte, error) {
		buf := make([]byte, fr.N)
		if _, err := f.ReadAt(buf, fr.Off); err != nil {
			return nil, err
		}
		return dec.DecodeAll(buf, nil)
	}
	// Trailing frames that do not decode to complete rows are torn too.
	var last []byte
	for len(frames) > 0 {
		b, err := decode(frames[len(frames)-1])
		if err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			last = b
			break
		}
		frames = frames[:len(frames)-1]
	}
	if len(frames) == 0 {
		return fileInfo{}, nil
	}
	end := frames[len(frames)-1].Off + frames[len(frames)-1].N
	info := fileInfo{size: end}
	first := last
	if len(frames) > 1 {
		if first, err = decode(frames[0]); err != nil {
			return info, err
		}
	}
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		if h := headerOf(first[:i]); h != nil {
			info.header, info.version = true, h.Version
		}
	}
	body := last[:len(last)-1]
	line := body[bytes.LastIndexByte(body, '\n')+1:]
	if len(frames) == 1 && info.header && len(line) == len(body) {
		return info, nil // the header alone
	}
	if seq, ok := lastSeq(line); ok {
		info.next = seq + 1
		return info, nil
	}
	return fullScan(io.NewSectionReader(f, 0, end), info)
}
