package httpsource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource/dedup"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// A request body is read whole before anything is emitted: every row is
// decoded and judged first, so a request is atomic — one bad row and
// nothing of it is accepted. Memory is bounded by max_request_body_size.

// parseBody reads, decodes and judges a request body. A nil *reqError
// means every row may be accepted.
func parseBody(body io.Reader, o parseOptions) (*parsedBody, *reqError) {
	pb := &parsedBody{byID: map[string]*parsedSession{}, arena: arenas.Get().(*sessionlog.Arena)}
	src, closeSrc, rerr := sniffBody(body, o.encoding, o.maxBody, o.ticket)
	if rerr != nil {
		return pb, rerr
	}
	defer closeSrc()
	if o.ticket != nil {
		src = o.ticket.reader(src)
	}
	counted := &countingReader{r: src}
	defer func() { pb.bytes = counted.n }()
	p := &parser{pb: pb, o: o}
	if o.endpoint == endpointLines {
		p.probe = sessionlog.NewRowDecoder(o.maxLine, 0)
		p.probe.SetArena(pb.arena)
	}
	br := lineReaders.Get().(*bufio.Reader)
	br.Reset(counted)
	nonBlank, rerr := p.readRows(br)
	br.Reset(nil) // no hold on the body; every line read is a copy of its own (readLine)
	lineReaders.Put(br)
	if rerr != nil {
		return pb, rerr
	}
	if nonBlank == 0 {
		// Nothing to judge is no success: a client whose file argument
		// named nothing (curl's @missing sends an empty body) must hear so.
		return pb, &reqError{status: http.StatusBadRequest, seq: -1, reason: "empty_body",
			msg: fmt.Sprintf("empty request body (%d bytes, no row): post the session's NDJSON rows", counted.n)}
	}
	for _, s := range pb.sessions {
		if rerr := s.finish(o.maxLine, pb.arena); rerr != nil {
			return pb, rerr
		}
	}
	return pb, nil
}

// lineReaders recycle the 64 KiB buffers request bodies are cut into lines
// with: one per request would be allocated and cleared for every post.
var lineReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// parser reads one request body into pb.
type parser struct {
	pb *parsedBody
	o  parseOptions
	// probe finds the session a wrapped line names (endpointLines).
	probe *sessionlog.RowDecoder
}

// readRows reads the body line by line and adds each non-blank line's
// row; it returns how many lines were not blank.
func (p *parser) readRows(br *bufio.Reader) (nonBlank int, rerr *reqError) {
	for line := 1; ; line++ {
		b, err := readLine(br, p.o.maxLine)
		if err != nil && !errors.Is(err, io.EOF) {
			return nonBlank, readError(err, line, p.o.maxLine)
		}
		if b == nil && errors.Is(err, io.EOF) {
			return nonBlank, nil
		}
		if len(bytes.TrimSpace(b)) > 0 {
			nonBlank++
			if rerr := p.addRow(b, line); rerr != nil {
				return nonBlank, rerr
			}
		}
		if errors.Is(err, io.EOF) {
			return nonBlank, nil
		}
	}
}

// addRow decodes one non-blank line into its session: the session it
// belongs to, the row decoded with that session's format, checked, and
// placed.
func (p *parser) addRow(b []byte, line int) *reqError {
	s, rerr := p.sessionOf(b, line)
	if s == nil {
		return rerr
	}
	row, err := s.dec.Decode(b, line)
	if err != nil {
		return versionError(err, line)
	}
	if p.o.endpoint == endpointSession && !p.o.full {
		// A request that begins past seq 0 is judged row by row
		// (finish): its later rows need no more than a shallow decode.
		if !s.begun {
			s.begun = true
			if (row.Kind == sessionlog.RowEvent || row.Kind == sessionlog.RowPacked) && row.FirstSeq() > 0 {
				s.shallow = true
				s.dec.SetShallow(true)
			}
		}
	}
	if rerr := p.check(row, line); rerr != nil {
		return rerr
	}
	return p.place(s, row, line)
}

// sessionOf is the session a line belongs to: the path's, or the one a
// wrapped line names. nil with no error: the line carries no session
// content (counted as ignored).
func (p *parser) sessionOf(b []byte, line int) (*parsedSession, *reqError) {
	if p.o.endpoint != endpointLines {
		return p.session(p.o.session), nil
	}
	// The line names its session inside: a first decoding finds it, the
	// second runs with that session's own format state.
	r, err := p.probe.Decode(b, line)
	if err != nil {
		return nil, versionError(err, line)
	}
	switch {
	case r.Kind == sessionlog.RowOther:
		p.pb.ignored++
		return nil, nil
	case r.Kind == sessionlog.RowInvalid && len(r.Problems) > 0:
		return nil, rowError(r.Problems[0])
	case r.Wrapper == sessionlog.WrapNone:
		return nil, &reqError{
			status: http.StatusBadRequest, line: line, seq: -1, reason: "no_session",
			msg: fmt.Sprintf("line %d: a bare session row names no session; /v1/session-events takes self-describing lines "+
				"(SDK session.event notifications, stream-json session_event lines, {\"sessionId\",\"event\"}); "+
				"post a session's own rows to /v1/sessions/{session_id}/events", line),
		}
	}
	return p.session(r.SessionID), nil
}

// session returns the part of the request that belongs to session id,
// beginning it at its first row: its decoder starts from the format
// version remembered for the session.
func (p *parser) session(id string) *parsedSession {
	// A session is its client's: it is keyed by the pair everywhere
	// (clientid.Key; the id itself for a request that names no client).
	// The key is kept (dedup state, record tracker) long after the
	// request: a string of its own, not a view into a line.
	id = clientid.Key(p.o.client, id)
	if s := p.pb.byID[id]; s != nil {
		return s
	}
	id = strings.Clone(id)
	s := &parsedSession{id: id, dec: sessionlog.NewRowDecoder(p.o.maxLine, 0)}
	s.dec.SetArena(p.pb.arena)
	if p.o.version != nil {
		if v := p.o.version(id); v != dedup.UnknownVersion {
			s.start = sessionlog.Format{Version: v, Known: true}
			s.dec.SetFormat(s.start)
		}
	}
	p.pb.byID[id] = s
	p.pb.sessions = append(p.pb.sessions, s)
	return s
}

// check refuses a row the request may not carry: one that takes the
// request's cited seqs past their bound, one with a violation of its own,
// a wrapped line naming another session than the path.
func (p *parser) check(row *sessionlog.Row, line int) *reqError {
	for i := range row.Events {
		p.pb.cited += len(row.Events[i].Sources)
	}
	if p.pb.cited > maxCitedSeqs {
		return &reqError{status: http.StatusRequestEntityTooLarge, line: line, seq: row.FirstSeq(), reason: "too_many_cited_seqs",
			msg: fmt.Sprintf("line %d: the request's sourceEventSeqs expand to more than %d seqs; split it", line, maxCitedSeqs)}
	}
	if len(row.Problems) > 0 {
		return rowError(row.Problems[0])
	}
	if p.o.endpoint == endpointSession && row.Wrapper != sessionlog.WrapNone && row.SessionID != "" && row.SessionID != p.o.session {
		return &reqError{
			status: http.StatusBadRequest, line: line, seq: row.FirstSeq(), reason: "session_mismatch",
			msg: fmt.Sprintf("line %d: the line names session %q, the path %q", line, row.SessionID, p.o.session),
		}
	}
	return nil
}

// place files a row under its session: its header (one per session), or
// one of its event and packed rows; a row carrying no session content is
// counted as ignored.
func (p *parser) place(s *parsedSession, row *sessionlog.Row, line int) *reqError {
	switch row.Kind {
	case sessionlog.RowOther:
		p.pb.ignored++
		return nil
	case sessionlog.RowHeader:
		if s.header != nil {
			return rowError(sessionlog.Violation{Line: line, Seq: -1, Code: sessionlog.CodeHeaderMisplaced,
				Message: fmt.Sprintf("a second header for session %q (the first is line %d)", s.id, s.header.Line)})
		}
		s.header, s.headerAt = row, len(s.rows)
	case sessionlog.RowEvent, sessionlog.RowPacked:
		s.rows = append(s.rows, row)
	default:
		return rowError(sessionlog.Violation{Line: line, Seq: -1, Code: sessionlog.CodeEnvelopeInvalid, Message: "row carries no event"})
	}
	p.pb.rows++
	return nil
}
