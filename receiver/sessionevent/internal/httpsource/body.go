package httpsource

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource/dedup"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// A request body is read whole before anything is emitted: every row is
// decoded and judged first, so a request is atomic — one bad row and
// nothing of it is accepted. Memory is bounded by max_request_body_size.

// endpoint says which of the two POST endpoints a body came to.
type endpoint uint8

const (
	// endpointSession: /v1/sessions/{session_id}/events — rows of one session.
	endpointSession endpoint = iota
	// endpointLines: /v1/session-events — self-describing wrapped lines.
	endpointLines
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
)

// parseOptions configure parseBody.
type parseOptions struct {
	endpoint endpoint
	// session is the path's session id (endpointSession).
	session string
	// maxLine is the longest row accepted.
	maxLine int
	// maxBody bounds the decompressed size of a body compressed without a
	// Content-Encoding (a raw .jsonl.zstd or .gz upload).
	maxBody int64
	// version is the header version remembered for a session from earlier
	// requests (dedup.UnknownVersion: none); nil means none.
	version func(session string) int
}

// reqError is a refused request: the status and what the client is told.
type reqError struct {
	status int
	msg    string
	// line is the 1-based line of the offending row (0: none), seq its seq
	// (-1: unknown), code the violation code when one applies.
	line int
	seq  int64
	code string
	// reason is the rows_rejected reason attribute.
	reason string
}

func (e *reqError) Error() string { return e.msg }

// rowError refuses a request because of one row's violation.
func rowError(v sessionlog.Violation) *reqError {
	return &reqError{
		status: http.StatusBadRequest, msg: fmt.Sprintf("line %d: %s", v.Line, v.String()),
		line: v.Line, seq: v.Seq, code: v.Code, reason: strings.ToLower(v.Code),
	}
}

// parsedSession is the part of a request that belongs to one session.
type parsedSession struct {
	id  string
	dec *sessionlog.RowDecoder
	// header is the session's header row, if the request carries one.
	header *sessionlog.Row
	// rows are the event and packed rows, sorted by seq once parsed.
	rows []*sessionlog.Row
	// dups counts rows the request repeats byte for byte.
	dups int
}

// parsedBody is a decoded, judged request body.
type parsedBody struct {
	sessions []*parsedSession // in order of first appearance
	byID     map[string]*parsedSession
	// rows counts the rows carrying session content (header, event,
	// packed); ignored the well-formed lines carrying none (status
	// notifications, result lines).
	rows, ignored int
	// bytes is the decompressed body size read.
	bytes int64
	// cited counts the seqs the rows' sourceEventSeqs expand to.
	cited int
	// arena holds the request's decoded rows (from arenas) until release.
	arena *sessionlog.Arena
}

// arenas recycle the decoded rows of requests: a request's rows are done
// with once it is answered (release).
var arenas = sync.Pool{New: func() any { return new(sessionlog.Arena) }}

// release frees the request's decoded rows; pb's rows are not to be read
// after it.
func (p *parsedBody) release() {
	if p.arena != nil {
		p.arena.Reset()
		arenas.Put(p.arena)
		p.arena = nil
	}
}

// maxCitedSeqs bounds the seqs the sourceEventSeqs of one request may
// expand to (a range of a few bytes can name a million seqs, and the
// request is held whole): 4M seqs, 32 MiB. Real sessions stay far below.
const maxCitedSeqs = 1 << 22

func (p *parsedBody) ids() []string {
	out := make([]string, len(p.sessions))
	for i, s := range p.sessions {
		out[i] = s.id
	}
	return out
}

// parseBody reads, decodes and judges a request body. A nil *reqError
// means every row may be accepted.
func parseBody(body io.Reader, o parseOptions) (*parsedBody, *reqError) {
	pb := &parsedBody{byID: map[string]*parsedSession{}, arena: arenas.Get().(*sessionlog.Arena)}
	src, closeSrc, rerr := sniffBody(body, o.maxBody)
	if rerr != nil {
		return pb, rerr
	}
	defer closeSrc()
	counted := &countingReader{r: src}
	br := bufio.NewReaderSize(counted, 64<<10)
	defer func() { pb.bytes = counted.n }()

	session := func(id string) *parsedSession {
		s := pb.byID[id]
		if s == nil {
			// The id is kept (dedup state, record tracker) long after the
			// request: a string of its own, not a view into a line.
			id = strings.Clone(id)
			s = &parsedSession{id: id, dec: sessionlog.NewRowDecoder(o.maxLine, 0)}
			s.dec.SetArena(pb.arena)
			if o.version != nil {
				if v := o.version(id); v != dedup.UnknownVersion {
					s.dec.SetFormat(sessionlog.Format{Version: v, Known: true})
				}
			}
			pb.byID[id] = s
			pb.sessions = append(pb.sessions, s)
		}
		return s
	}
	var probe *sessionlog.RowDecoder
	if o.endpoint == endpointLines {
		probe = sessionlog.NewRowDecoder(o.maxLine, 0)
		probe.SetArena(pb.arena)
	}

	line, nonBlank := 0, 0
	for {
		b, err := readLine(br, o.maxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return pb, readError(err, line+1, o.maxLine)
		}
		if b == nil && errors.Is(err, io.EOF) {
			break
		}
		line++
		if len(bytes.TrimSpace(b)) > 0 {
			nonBlank++
			if rerr := pb.addRow(b, line, o, probe, session); rerr != nil {
				return pb, rerr
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if nonBlank == 0 {
		// Nothing to judge is no success: a client whose file argument
		// named nothing (curl's @missing sends an empty body) must hear so.
		return pb, &reqError{status: http.StatusBadRequest, seq: -1, reason: "empty_body",
			msg: fmt.Sprintf("empty request body (%d bytes, no row): post the session's NDJSON rows", counted.n)}
	}
	for _, s := range pb.sessions {
		if rerr := s.finish(); rerr != nil {
			return pb, rerr
		}
	}
	return pb, nil
}

// addRow decodes one non-blank line into its session.
func (pb *parsedBody) addRow(b []byte, line int, o parseOptions, probe *sessionlog.RowDecoder, session func(string) *parsedSession) *reqError {
	var s *parsedSession
	if o.endpoint == endpointLines {
		// The line names its session inside: a first decoding finds it,
		// the second runs with that session's own format state.
		p, err := probe.Decode(b, line)
		if err != nil {
			return versionError(err, line)
		}
		switch {
		case p.Kind == sessionlog.RowOther:
			pb.ignored++
			return nil
		case p.Kind == sessionlog.RowInvalid && len(p.Problems) > 0:
			return rowError(p.Problems[0])
		case p.Wrapper == sessionlog.WrapNone:
			return &reqError{
				status: http.StatusBadRequest, line: line, seq: -1, reason: "no_session",
				msg: fmt.Sprintf("line %d: a bare session row names no session; /v1/session-events takes self-describing lines "+
					"(SDK session.event notifications, stream-json session_event lines, {\"sessionId\",\"event\"}); "+
					"post a session's own rows to /v1/sessions/{session_id}/events", line),
			}
		}
		s = session(p.SessionID)
	} else {
		s = session(o.session)
	}
	row, err := s.dec.Decode(b, line)
	if err != nil {
		return versionError(err, line)
	}
	for i := range row.Events {
		pb.cited += len(row.Events[i].Sources)
	}
	if pb.cited > maxCitedSeqs {
		return &reqError{status: http.StatusRequestEntityTooLarge, line: line, seq: row.FirstSeq(), reason: "too_many_cited_seqs",
			msg: fmt.Sprintf("line %d: the request's sourceEventSeqs expand to more than %d seqs; split it", line, maxCitedSeqs)}
	}
	if len(row.Problems) > 0 {
		return rowError(row.Problems[0])
	}
	if o.endpoint == endpointSession && row.Wrapper != sessionlog.WrapNone && row.SessionID != "" && row.SessionID != o.session {
		return &reqError{
			status: http.StatusBadRequest, line: line, seq: row.FirstSeq(), reason: "session_mismatch",
			msg: fmt.Sprintf("line %d: the line names session %q, the path %q", line, row.SessionID, o.session),
		}
	}
	switch row.Kind {
	case sessionlog.RowOther:
		pb.ignored++
		return nil
	case sessionlog.RowHeader:
		if s.header != nil {
			return rowError(sessionlog.Violation{Line: line, Seq: -1, Code: sessionlog.CodeHeaderMisplaced,
				Message: fmt.Sprintf("a second header for session %q (the first is line %d)", s.id, s.header.Line)})
		}
		s.header = row
	case sessionlog.RowEvent, sessionlog.RowPacked:
		s.rows = append(s.rows, row)
	default:
		return rowError(sessionlog.Violation{Line: line, Seq: -1, Code: sessionlog.CodeEnvelopeInvalid, Message: "row carries no event"})
	}
	pb.rows++
	return nil
}

func versionError(err error, line int) *reqError {
	var uv *sessionlog.UnsupportedVersionError
	if errors.As(err, &uv) {
		return &reqError{status: http.StatusBadRequest, msg: uv.Error(), line: uv.Line, seq: -1,
			code: "UNSUPPORTED_VERSION", reason: "unsupported_version"}
	}
	return &reqError{status: http.StatusBadRequest, msg: fmt.Sprintf("line %d: %v", line, err), line: line, seq: -1, reason: "invalid"}
}

// contextFree are the violations an event shows on its own; they are
// judged in every request. The others need the log from its start.
var contextFree = map[string]bool{
	sessionlog.CodeSurfaceOpMissing:    true,
	sessionlog.CodeSurfaceKeysLogged:   true,
	sessionlog.CodeSourcesForbidden:    true,
	sessionlog.CodeEnvelopeInvalid:     true,
	sessionlog.CodeSystemForbidden:     true,
	sessionlog.CodeErrorWithoutIsError: true,
}

// finish orders the session's rows by seq, folds byte-identical repeats,
// refuses conflicting ones, and validates the rows.
//
// Rows may come in any order and any batching, so what a request can be
// judged on depends on what it holds. A request that holds the session from
// its start (seq 0) is checked against every invariant of docs/format.md §11 —
// dense seqs, turn and step nesting, tool calls resolved, replace ranges on
// the surface — as dsh itself would check the file. Any other request can
// only be checked row by row (the rows' own decoding, surface keys), and
// what precedes it is the connector's to judge, gaps included.
func (s *parsedSession) finish() *reqError {
	slices.SortStableFunc(s.rows, func(a, b *sessionlog.Row) int { return cmp.Compare(a.FirstSeq(), b.FirstSeq()) })
	kept := s.rows[:0]
	for _, r := range s.rows {
		if n := len(kept); n > 0 && r.FirstSeq() <= kept[n-1].LastSeq() {
			prev := kept[n-1]
			if r.FirstSeq() == prev.FirstSeq() && bytes.Equal(r.Bytes, prev.Bytes) {
				s.dups++
				continue
			}
			return rowError(sessionlog.Violation{Line: r.Line, Seq: r.FirstSeq(), Code: sessionlog.CodeSeqDuplicate,
				Message: fmt.Sprintf("seq %d is also on line %d, with other content", r.FirstSeq(), prev.Line)})
		}
		kept = append(kept, r)
	}
	s.rows = kept

	whole := len(s.rows) > 0 && s.rows[0].FirstSeq() == 0
	f := s.dec.Format()
	v := sessionlog.NewValidator()
	v.TrackSurface(whole)
	judge := func(vs []sessionlog.Violation) *reqError {
		for _, x := range vs {
			if x.Code == sessionlog.CodeSeededMismatch {
				continue // needs the whole log; a request may be a prefix
			}
			if whole || contextFree[x.Code] {
				return rowError(x)
			}
		}
		return nil
	}
	if s.header != nil {
		if rerr := judge(v.Row(s.header, f)); rerr != nil {
			return rerr
		}
	}
	for _, r := range s.rows {
		if rerr := judge(v.Row(r, f)); rerr != nil {
			return rerr
		}
	}
	return judge(v.Finish(f))
}

// sniffBody recognizes a body compressed without a Content-Encoding by
// its magic bytes — `curl --data-binary @session.v4.jsonl.zstd` — and
// returns the decompressed stream, bounded by maxBody.
func sniffBody(body io.Reader, maxBody int64) (io.Reader, func(), *reqError) {
	br := bufio.NewReader(body)
	head, err := br.Peek(4)
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
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdWindow(maxBody)))
		if err != nil {
			return nil, nil, &reqError{status: http.StatusBadRequest, msg: "undecodable zstd body: " + err.Error(), seq: -1, reason: "decompression"}
		}
		return limit(zr), zr.Close, nil
	case bytes.HasPrefix(head, gzipMagic):
		gr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, &reqError{status: http.StatusBadRequest, msg: "undecodable gzip body: " + err.Error(), seq: -1, reason: "decompression"}
		}
		return limit(gr), func() { _ = gr.Close() }, nil
	}
	return br, func() {}, nil
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
