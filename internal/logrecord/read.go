package logrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/sessiontable"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Origin says which producer made a record.
type Origin int

const (
	// OriginReceiver: our session_event receiver (Body = the physical row).
	OriginReceiver Origin = iota
	// OriginDshV4: dsh v4's own OTLP export (attribute content = envelope JSON).
	OriginDshV4
	// OriginDshV0: dsh v0's own OTLP export (body = data, event.* attributes;
	// one chunk per step, so seq gaps are normal).
	OriginDshV0
)

// ErrNotSession is returned for a record that is no session event of any
// producer we know (dsh's operational records, other logs in the pipeline).
var ErrNotSession = errors.New("not a dsh session record")

// Record is a log record read back as session events.
type Record struct {
	// SessionID is the session's key (clientid.Key): its id, and the
	// client that wrote it when one is named.
	SessionID string
	Origin    Origin
	Row       *sessionlog.Row
	Format    sessionlog.Format
	// Header is the session's header, once a header record was read.
	Header *sessionlog.Header
}

// Reader reads records back into rows. It keeps per session what the
// rows' decoding needs across records (the format version, the header),
// for at most maxSessions sessions.
type Reader struct {
	sessions *sessiontable.Table[*readState]

	// arena holds the rows of the batch ReadBatch reads: a batch reuses
	// the memory of the one before. cur is the arena of the batch being
	// read (ReadBatch's or ReadBatchIn's), nil outside one.
	arena sessionlog.Arena
	cur   *sessionlog.Arena

	shallow bool
	// client is the client the batch being read came from (SetClient):
	// the sessions of its records that name none are that client's.
	client string

	// last is the state found last: the records of a batch come session
	// by session, so most lookups need no hashing.
	last *readState
}

// SetClient names the client the next batches come from, "" for none
// (clientid.FromContext of the batch's context): a record's own
// enduser.id comes first.
func (r *Reader) SetClient(client string) { r.client = client }

// SetShallow makes the reader decode the rows of the sessions it meets
// from then on shallowly (sessionlog.RowDecoder.SetShallow): enough to
// place their events, for a caller that reads no more of them.
func (r *Reader) SetShallow(on bool) { r.shallow = on }

type readState struct {
	id     string // the session's, owned
	dec    *sessionlog.RowDecoder
	header *sessionlog.Header
	elem   *sessiontable.Elem[*readState]
}

// NewReader returns a Reader remembering at most maxSessions sessions
// (turnmodel.DefaultMaxSessions when not positive).
func NewReader(maxSessions int) *Reader {
	if maxSessions <= 0 {
		maxSessions = turnmodel.DefaultMaxSessions
	}
	return &Reader{sessions: sessiontable.New[*readState](maxSessions)}
}

func (r *Reader) state(session string) *readState {
	if s := r.last; s != nil && session == s.id {
		r.sessions.Touch(s.elem)
		return s
	}
	s, ok := r.sessions.Get(session)
	if !ok {
		if r.sessions.Full() {
			id, _, _ := r.sessions.Oldest()
			r.sessions.Remove(id)
			r.last = nil
		}
		s = &readState{dec: sessionlog.NewRowDecoder(0, 0)}
		s.dec.SetShallow(r.shallow)
		session = strings.Clone(session) // kept: no view into a record
		s.id = session
		s.elem = r.sessions.Add(session, s)
	}
	r.last = s
	return s
}

// Forget drops what the Reader keeps of a session.
func (r *Reader) Forget(session string) {
	r.sessions.Remove(session)
	if r.last != nil && session == r.last.id {
		r.last = nil
	}
}

// stringBytes views a record's string as bytes without copying it. The
// decoder only reads its input (the Row it returns keeps the slice as
// Row.Bytes, which nothing writes to), so the string stays immutable.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func strAttr(m pcommon.Map, key string) string {
	if v, ok := m.Get(key); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

func intAttr(m pcommon.Map, key string) (int64, bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), true
	case pcommon.ValueTypeDouble:
		return int64(v.Double()), true
	}
	return 0, false
}

// Read decodes one record. The returned Row's problems say what is wrong
// with a bad row; the error is ErrNotSession or a header version this
// reader does not support.
func (r *Reader) Read(res pcommon.Resource, lr plog.LogRecord) (Record, error) {
	attrs := lr.Attributes()
	session := SessionKey(res, lr, r.client)
	switch name := lr.EventName(); {
	case name == EventNameEvent || name == EventNameHeader:
		if session == "" || lr.Body().Type() != pcommon.ValueTypeStr {
			return Record{}, fmt.Errorf("%w: %s record without session.id or string body", ErrNotSession, name)
		}
		return r.decode(session, OriginReceiver, stringBytes(lr.Body().Str()), name == EventNameHeader, attrs)
	case name == "session-log" || strAttr(attrs, "content") != "":
		content := strAttr(attrs, "content")
		if session == "" || content == "" {
			return Record{}, fmt.Errorf("%w: session-log record without sessionId or content", ErrNotSession)
		}
		return r.decode(session, OriginDshV4, stringBytes(content), false, attrs)
	}
	typ := strAttr(attrs, AttrEventType)
	seq, hasSeq := intAttr(attrs, AttrEventSeq)
	if typ == "" || !hasSeq || session == "" {
		return Record{}, ErrNotSession
	}
	// dsh v0's export: rebuild the envelope from the body (data) and the
	// event.* attributes; time is the record's timestamp in ms.
	env := map[string]any{
		"type": typ,
		"seq":  seq,
		"time": int64(lr.Timestamp()) / int64(time.Millisecond),
		"data": lr.Body().AsRaw(),
	}
	b, err := json.Marshal(env)
	if err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrNotSession, err)
	}
	r.v0Header(session, attrs)
	return r.decode(session, OriginDshV0, b, false, attrs)
}

// SessionKey is the key (clientid.Key) of the session a record belongs
// to, "" when it names none: its session.id (or, on dsh's v4 export,
// sessionId) and its enduser.id, the record's or its resource's, else
// client (the batch's).
func SessionKey(res pcommon.Resource, lr plog.LogRecord, client string) string {
	attrs := lr.Attributes()
	session := strAttr(attrs, AttrSessionID)
	if session == "" {
		session = strAttr(res.Attributes(), AttrSessionID)
	}
	if session == "" {
		session = strAttr(attrs, "sessionId")
	}
	if session == "" {
		return ""
	}
	if c := strAttr(attrs, semconv.EnduserID); c != "" {
		client = c
	} else if c := strAttr(res.Attributes(), semconv.EnduserID); c != "" {
		client = c
	}
	return clientid.Key(client, session)
}

// v0Header gives a session read from dsh v0's export the header that
// export leaves out, made of what each of its records says of it
// (docs/format.md §10.2): the working directory, and for a fork its
// parent and seed length — so that a fork's inherited events are placed
// as the parent's, as with a header. A session with a header keeps it.
func (r *Reader) v0Header(session string, attrs pcommon.Map) {
	st := r.state(session)
	if st.header != nil {
		return
	}
	cwd, parent := strAttr(attrs, semconv.SessionCwd), strAttr(attrs, semconv.SessionParentID)
	seed, hasSeed := intAttr(attrs, semconv.SessionSeedLength)
	if cwd == "" && parent == "" && !hasSeed {
		return
	}
	st.header = &sessionlog.Header{ID: clientid.Session(st.id), Cwd: strings.Clone(cwd), ParentSession: strings.Clone(parent),
		SeedLength: seed, HasSeedLength: hasSeed}
}

// adoptVersion lets a record's format version attribute fix the format of
// a session read without its header.
func (r *Reader) adoptVersion(st *readState, attrs pcommon.Map) {
	if v, ok := intAttr(attrs, AttrFormatVersion); ok && v >= 0 && v <= 4 {
		f := st.dec.Format()
		if !f.FromHeader && (!f.Known || int(v) > f.Version) {
			st.dec.SetFormat(sessionlog.Format{Version: int(v), Known: true})
		}
	}
}

func (r *Reader) decode(session string, origin Origin, body []byte, header bool, attrs pcommon.Map) (Record, error) {
	st := r.state(session)
	if header {
		// A header may arrive after events (another batch): decode it on
		// its own, then let it fix the session's format.
		hd := sessionlog.NewRowDecoder(0, 0)
		row, err := hd.Decode(body, 1)
		if err != nil {
			return Record{}, err
		}
		if row.Header != nil {
			st.header = row.Header
			st.dec.SetFormat(hd.Format())
		}
		return Record{SessionID: session, Origin: origin, Row: row, Format: hd.Format(), Header: st.header}, nil
	}
	r.adoptVersion(st, attrs)
	st.dec.SetArena(r.cur) // nil outside a batch: the row is the caller's
	seq, _ := intAttr(attrs, AttrEventSeq)
	// Rows read back have no line; the seq stands in for it in messages.
	row, err := st.dec.Decode(body, int(seq)+1)
	if err != nil {
		return Record{}, err
	}
	return Record{SessionID: session, Origin: origin, Row: row, Format: st.dec.Format(), Header: st.header}, nil
}

// ReadBatch reads every record of ld and calls fn with each, in the
// batch's order except that header records come first: a header fixes the
// format its session's rows decode in, and may come after them in a batch.
// err is what Read returned (ErrNotSession for a record of no dsh session).
//
// The rows and events of a batch's records live in memory the reader
// reuses for its next batch (sessionlog.Arena): they are valid until the
// next ReadBatch, and whoever keeps an event longer keeps a copy
// (sessionlog.Event.Own). Rows of Read stay valid.
func (r *Reader) ReadBatch(ld plog.Logs, fn func(res pcommon.Resource, lr plog.LogRecord, rec Record, err error)) {
	r.ReadBatchIn(ld, &r.arena, fn)
}

// ReadBatchIn is ReadBatch with the rows decoded into arena (reset first)
// instead of the reader's own: they stay valid until arena is reset again,
// whatever the reader reads meanwhile. A caller that decodes one batch
// while it still works on another gives each its own arena.
func (r *Reader) ReadBatchIn(ld plog.Logs, arena *sessionlog.Arena, fn func(res pcommon.Resource, lr plog.LogRecord, rec Record, err error)) {
	arena.Reset()
	r.cur = arena
	defer func() { r.cur = nil }()
	rls := ld.ResourceLogs()
	for _, headers := range []bool{true, false} {
		for i := 0; i < rls.Len(); i++ {
			rl := rls.At(i)
			sls := rl.ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					lr := lrs.At(k)
					if (lr.EventName() == EventNameHeader) != headers {
						continue
					}
					rec, err := r.Read(rl.Resource(), lr)
					fn(rl.Resource(), lr, rec, err)
				}
			}
		}
	}
}
