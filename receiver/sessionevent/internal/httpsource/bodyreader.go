package httpsource

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// How a request body's bytes become lines: decompressed when they are
// compressed without a Content-Encoding, bounded, counted, and cut at
// newlines.

// gzipMagic starts a gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// sniffBody recognizes a compressed body by its magic bytes — sent with
// Content-Encoding: zstd (the receiver decodes zstd itself, see
// zstdPassthrough) or without a Content-Encoding, as `curl --data-binary
// @session.v4.jsonl.zstd` does — and returns the decompressed stream,
// bounded by maxBody. A zstd body first takes the memory its decoder will
// hold (zstdDecoderBytes) from the request's admission ticket, when it has
// one. encoding is the request's Content-Encoding.
func sniffBody(body io.Reader, encoding string, maxBody int64, t *ticket) (io.Reader, func(), *reqError) {
	br := bufio.NewReader(body)
	head, err := br.Peek(zstd.HeaderMaxSize)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, nil, readError(err, 1, 0)
	}
	limit := func(r io.Reader) io.Reader {
		if maxBody <= 0 {
			return r
		}
		return &limitedReader{r: r, left: maxBody}
	}
	switch {
	case sessionroot.IsZstd(head):
		if rerr := t.takeZstd(head, maxBody); rerr != nil {
			return nil, nil, rerr
		}
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdWindow(maxBody)))
		if err != nil {
			return nil, nil, &reqError{status: http.StatusBadRequest, msg: "undecodable zstd body: " + err.Error(), seq: -1, reason: "decompression"}
		}
		return limit(zr), zr.Close, nil
	case strings.EqualFold(strings.TrimSpace(encoding), "zstd"):
		return nil, nil, &reqError{status: http.StatusBadRequest, seq: -1, reason: "decompression",
			msg: "undecodable zstd body: Content-Encoding is zstd but the body does not start with a zstd frame"}
	case bytes.HasPrefix(head, gzipMagic):
		gr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, &reqError{status: http.StatusBadRequest, msg: "undecodable gzip body: " + err.Error(), seq: -1, reason: "decompression"}
		}
		return limit(gr), func() { _ = gr.Close() }, nil
	}
	return br, func() {}, nil
}

// zstdPassthrough is the decoder the receiver gives confighttp for
// Content-Encoding: zstd: it leaves the body as it is (nil), so that
// sniffBody decodes it, its decoder's memory taken from the admission
// control first. confighttp's own decoder would allocate its window before
// the receiver sees a byte, and keep it in a pool afterwards.
func zstdPassthrough(io.ReadCloser) (io.ReadCloser, error) { return nil, nil }

// zstdDecoderBytes is what a streaming zstd decoder holds for a frame
// whose header is head: its window (a single-segment frame's window is its
// content size), as bounded by zstdWindow(maxBody), and room for two
// blocks. Later frames of the body may grow it up to that bound.
func zstdDecoderBytes(head []byte, maxBody int64) int64 {
	bound := zstdWindow(maxBody)
	var h zstd.Header
	w := bound
	if err := h.Decode(head); err == nil {
		switch {
		case h.SingleSegment && h.HasFCS:
			w = min(h.FrameContentSize, bound)
		case h.WindowSize > 0:
			w = min(h.WindowSize, bound)
		}
	}
	const block = 128<<10 + 32 // the largest block and its copy overrun
	return int64(w) + 2*int64(min(w, block))
}

// takeZstd takes a zstd body's decoder memory from the ticket (none: no
// ticket).
func (t *ticket) takeZstd(head []byte, maxBody int64) *reqError {
	if t == nil {
		return nil
	}
	n := zstdDecoderBytes(head, maxBody)
	if !t.a.take(n) {
		return overCapacity(t.a.limit)
	}
	t.held += n
	return nil
}

// zstdWindow bounds the window a zstd body may ask for, as confighttp does.
func zstdWindow(maxBody int64) uint64 {
	w := uint64(8 << 20)
	if maxBody > int64(w) {
		w = uint64(maxBody)
	}
	return min(w, zstd.MaxWindowSize)
}

// errBodyTooLarge: a body decompressed by us grew past max_request_body_size.
var errBodyTooLarge = errors.New("decompressed body exceeds max_request_body_size")

type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// Allow a clean EOF exactly at the limit.
		var one [1]byte
		if n, err := l.r.Read(one[:]); n > 0 {
			return 0, errBodyTooLarge
		} else if err != nil {
			return 0, err
		}
		return 0, nil
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errLineTooLong: a line over max_line_bytes.
var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline (nil, io.EOF at the
// end; the last line may lack its newline: a request body is complete).
// A line longer than maxLine is errLineTooLong; nothing longer is buffered.
func readLine(br *bufio.Reader, maxLine int) ([]byte, error) {
	var acc []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(acc)+len(frag) > maxLine+1 {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			if acc == nil {
				return bytes.Clone(frag[:len(frag)-1]), nil
			}
			acc = append(acc, frag[:len(frag)-1]...)
			return acc, nil
		case errors.Is(err, bufio.ErrBufferFull):
			acc = append(acc, frag...)
		case errors.Is(err, io.EOF):
			acc = append(acc, frag...)
			if len(acc) > maxLine {
				return nil, errLineTooLong
			}
			if len(acc) == 0 {
				return nil, io.EOF
			}
			return acc, io.EOF
		default:
			return nil, err
		}
	}
}

// readError maps a failure to read the body to its status.
func readError(err error, line, maxLine int) *reqError {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || errors.Is(err, errBodyTooLarge):
		return &reqError{status: http.StatusRequestEntityTooLarge, msg: "request body too large: " + err.Error(), seq: -1, reason: "body_too_large"}
	case errors.Is(err, errOverCapacity):
		return &reqError{status: http.StatusServiceUnavailable, seq: -1, reason: "bytes_in_flight",
			msg: fmt.Sprintf("the receiver is reading its limit of request bodies at once (max_bytes_in_flight, decompressed; cut at line %d), retry later", line)}
	case errors.Is(err, errLineTooLong):
		return &reqError{status: http.StatusRequestEntityTooLarge, line: line, seq: -1, code: sessionlog.CodeRowTooLong, reason: "row_too_long",
			msg: fmt.Sprintf("line %d: %s: the row exceeds max_line_bytes (%d)", line, sessionlog.CodeRowTooLong, maxLine)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The server's read_timeout cut a slow body off: nothing wrong with
		// the rows read so far, the client may send the request again.
		return &reqError{status: http.StatusRequestTimeout, seq: -1, reason: "unreadable_body",
			msg: fmt.Sprintf("the request body did not arrive within the server's read_timeout (cut at line %d)", line)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &reqError{status: http.StatusBadRequest, line: line, seq: -1, reason: "decompression",
			msg: fmt.Sprintf("line %d: the compressed body ends inside a frame (truncated upload?)", line)}
	default:
		return &reqError{status: http.StatusBadRequest, line: line, seq: -1, reason: "unreadable_body",
			msg: fmt.Sprintf("line %d: unreadable body: %v", line, err)}
	}
}
