// Package archive writes dsh session logs into a dsh session root
// (docs/format.md §2): one file per session and format generation, header
// first, rows in seq order, each row exactly once — across re-deliveries
// and restarts, because the files themselves are the state: a session
// touched for the first time resumes after the last row on disk.
//
// It imports no collector package; the session_archive exporter is a thin
// adapter that turns log records into Rows. An Archive is not safe for
// concurrent use: the caller serializes Add, Sweep and Close.
package archive

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.uber.org/zap"
)

// Compression is the physical encoding of the files (docs/format.md §2.4).
type Compression int

const (
	// CompressionNone writes plain session[.vN].jsonl files.
	CompressionNone Compression = iota
	// CompressionZstd writes session[.vN].jsonl.zstd files in dsh's frame
	// layout: the header in a frame of its own, then one frame per batch.
	CompressionZstd
)

// Fsync says when written data is forced to stable storage.
type Fsync int

const (
	// FsyncNone leaves flushing to the operating system.
	FsyncNone Fsync = iota
	// FsyncBatch syncs every file written by an Add (and new directory
	// entries) before Add returns: what Add acknowledged survives a power
	// loss.
	FsyncBatch
	// FsyncAlways writes and syncs every row on its own (a zstd frame per
	// row): at most the row being written can be torn.
	FsyncAlways
)

// Give-up causes.
const (
	CauseTimeout  = "timeout"
	CauseOverflow = "overflow"
	CauseEvicted  = "evicted"
	CauseShutdown = "shutdown"
)

// Drop reasons.
const (
	// DropInvalid: a row without a session id, lines or seqs.
	DropInvalid = "invalid"
	// DropPath: the session's path cannot be created (a name too long for
	// the file system, a file where a directory should be).
	DropPath = "path"
	// DropHeaderLate: a header arrived for a generation already archived
	// without one; the file cannot gain a first line.
	DropHeaderLate = "header_late"
)

// Observer receives the archive's counts, for self-telemetry.
type Observer interface {
	// Written counts rows (a packed row once) and bytes appended to files.
	Written(rows, bytes int64)
	// FileCreated counts a session file created.
	FileCreated()
	// Duplicates counts rows not written because they already were (or
	// are held already).
	Duplicates(rows int64)
	// GaveUp counts one give-up and the seqs it skipped for good.
	GaveUp(cause string, skipped int64)
	// Dropped counts rows that cannot be archived.
	Dropped(reason string, rows int64)
}

type nopObserver struct{}

func (nopObserver) Written(int64, int64)  {}
func (nopObserver) FileCreated()          {}
func (nopObserver) Duplicates(int64)      {}
func (nopObserver) GaveUp(string, int64)  {}
func (nopObserver) Dropped(string, int64) {}

// Options configure an Archive.
type Options struct {
	// Root is the session root; it must exist.
	Root        string
	Compression Compression
	Fsync       Fsync
	// MaxPendingRows bounds, per session generation, the rows held while
	// an earlier seq (or the header) is awaited.
	MaxPendingRows int
	// PendingTimeout is how long a missing seq (or header) is awaited.
	PendingTimeout time.Duration
	// MaxSessions bounds the sessions kept in memory; the least recently
	// used is closed (its held rows given up) beyond it.
	MaxSessions int
	// MaxOpenFiles bounds the open file handles.
	MaxOpenFiles int
	Observer     Observer
	Logger       *zap.Logger
}

// Row is one record to archive.
type Row struct {
	// Session is the session id.
	Session string
	// Header marks the session header row; Version and Cwd are its own.
	Header bool
	// Version is the record's format version (HasVersion): the header's
	// for rows of a file, the inferred one for a live stream.
	Version    int
	HasVersion bool
	// Inferred is what the decoder inferred of a headerless session's
	// version so far (HasInferred), to name its file.
	Inferred    int
	HasInferred bool
	Cwd         string
	// Live marks a row of a live transport (a line wrapper, dsh's own
	// export): it never waits for a header, as live streams have none.
	Live bool
	// Packed marks a v0/v1 packed chunk row (First..Last are its members).
	Packed bool
	// First and Last are the seqs the row occupies.
	First, Last int64
	// Lines are the lines to write, without their newlines: the physical
	// row for a file row, the logical events for a wrapped one.
	Lines [][]byte
}

// Archive writes sessions under a root.
type Archive struct {
	opts     Options
	obs      Observer
	log      *zap.Logger
	enc      *zstd.Encoder
	sessions map[string]*session
	lru      *list.List // *session, least recently used first
	files    *list.List // *gen with an open file, least recently used first
	waiting  map[*gen]struct{}
	dirty    map[*gen]struct{}
	dirs     map[string]struct{} // directories whose entries changed
	pending  int
	closed   bool
}

// session is what the archive knows of one session id: its generations.
type session struct {
	id   string
	esc  string
	gens map[int]*gen
	// stream is the generation of the session's headerless rows (live
	// transports, bare rows without a header); it may be one of gens.
	stream *gen
	elem   *list.Element
}

// gen is one file: a format generation of a session (docs/format.md §2.1).
type gen struct {
	s       *session
	version int
	// isStream: headerless; its version (and file name) is decided when
	// its file is created.
	isStream bool
	inferred int
	// hdr is a header row waiting to be written first.
	hdr *Row
	// path is the file; "" until it exists. header: it starts with one.
	path   string
	header bool
	size   int64
	next   int64 // the next seq to write
	f      *os.File
	fElem  *list.Element
	broken bool // state unknown after a failed write: rescan before writing
	// into is the generation this one was merged into; its rows moved there.
	into *gen

	held      map[int64]*item // by first seq
	waitSince time.Time
}

// New returns an Archive writing under opts.Root.
func New(opts Options) (*Archive, error) {
	if opts.Root == "" {
		return nil, errors.New("archive root is empty")
	}
	if fi, err := os.Stat(opts.Root); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("archive root %s is not a directory", opts.Root)
	}
	if opts.MaxPendingRows <= 0 {
		opts.MaxPendingRows = 4096
	}
	if opts.PendingTimeout <= 0 {
		opts.PendingTimeout = 30 * time.Second
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 10000
	}
	if opts.MaxOpenFiles <= 0 {
		opts.MaxOpenFiles = 256
	}
	a := &Archive{
		opts:     opts,
		obs:      opts.Observer,
		log:      opts.Logger,
		sessions: map[string]*session{},
		lru:      list.New(),
		files:    list.New(),
		waiting:  map[*gen]struct{}{},
		dirty:    map[*gen]struct{}{},
		dirs:     map[string]struct{}{},
	}
	if a.obs == nil {
		a.obs = nopObserver{}
	}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	if opts.Compression == CompressionZstd {
		// Checksummed frames at the default level, as dsh writes them.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true),
			zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		a.enc = enc
	}
	return a, nil
}

// Sessions is the number of sessions held in memory.
func (a *Archive) Sessions() int { return len(a.sessions) }

// Pending is the number of rows held while an earlier seq or a header is
// awaited.
func (a *Archive) Pending() int { return a.pending }

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("archive is closed")

// Add archives rows. Rows that are next are written at once (one write,
// or one zstd frame, per file); rows that arrive early are held. The error
// is an I/O failure to retry: what it could not write stays held, and rows
// already written are skipped as duplicates when they come again.
func (a *Archive) Add(rows []Row, now time.Time) error {
	if a.closed {
		return ErrClosed
	}
	touched := map[*gen]struct{}{}
	for i := range rows {
		r := &rows[i]
		if g := a.add(r); g != nil {
			touched[g] = struct{}{}
		}
	}
	var errs []error
	for g := range touched {
		if err := a.settle(a.current(g), now); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.sync(); err != nil {
		errs = append(errs, err)
	}
	a.evict(now)
	return errors.Join(errs...)
}

// current follows a generation that was merged into another since.
func (a *Archive) current(g *gen) *gen {
	for g.into != nil {
		g = g.into
	}
	return g
}

// Sweep gives up on what has waited PendingTimeout by now.
func (a *Archive) Sweep(now time.Time) error {
	if a.closed {
		return nil
	}
	var errs []error
	for g := range a.waiting {
		if now.Sub(g.waitSince) >= a.opts.PendingTimeout {
			if err := a.giveUp(g, CauseTimeout, now); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := a.sync(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close writes every held row (a give-up, cause shutdown), syncs and
// closes the files. The Archive cannot be used afterwards.
func (a *Archive) Close(now time.Time) error {
	if a.closed {
		return nil
	}
	var errs []error
	for el := a.lru.Front(); el != nil; el = el.Next() {
		if err := a.flushSession(el.Value.(*session), CauseShutdown, now); err != nil {
			errs = append(errs, err)
		}
	}
	if err := a.sync(); err != nil {
		errs = append(errs, err)
	}
	for el := a.files.Front(); el != nil; el = el.Next() {
		g := el.Value.(*gen)
		if err := g.f.Close(); err != nil {
			errs = append(errs, err)
		}
		g.f, g.fElem = nil, nil
	}
	a.files.Init()
	if a.enc != nil {
		errs = append(errs, a.enc.Close())
	}
	a.closed = true
	return errors.Join(errs...)
}

// flushSession gives up on everything a session holds and writes it.
func (a *Archive) flushSession(s *session, cause string, now time.Time) error {
	var errs []error
	for _, g := range a.gensOf(s) {
		g = a.current(g)
		for len(g.held) > 0 {
			prev, before := g, len(g.held)
			if err := a.giveUp(g, cause, now); err != nil {
				errs = append(errs, err)
				break
			}
			if g = a.current(g); g == prev && len(g.held) >= before {
				break // no progress; cannot happen, but never loop forever
			}
		}
	}
	return errors.Join(errs...)
}

// evict forgets the least recently used sessions beyond MaxSessions.
func (a *Archive) evict(now time.Time) {
	for len(a.sessions) > a.opts.MaxSessions {
		s := a.lru.Front().Value.(*session)
		if err := a.flushSession(s, CauseEvicted, now); err != nil {
			a.log.Warn("Could not write the held rows of an evicted session", zap.String("session", s.id), zap.Error(err))
		}
		_ = a.sync()
		for _, g := range a.gensOf(s) {
			a.closeFile(g)
			a.unwait(g)
		}
		a.lru.Remove(s.elem)
		delete(a.sessions, s.id)
	}
}

func (a *Archive) gensOf(s *session) []*gen {
	out := make([]*gen, 0, len(s.gens)+1)
	for _, g := range s.gens {
		out = append(out, g)
	}
	if s.stream != nil && s.gens[s.stream.version] != s.stream {
		out = append(out, s.stream)
	}
	return out
}

// session returns the state of a session id, loading it from disk when it
// is touched for the first time.
func (a *Archive) session(id string) *session {
	if s := a.sessions[id]; s != nil {
		a.lru.MoveToBack(s.elem)
		return s
	}
	s := a.load(id)
	s.elem = a.lru.PushBack(s)
	a.sessions[id] = s
	return s
}

// add routes one row to its generation and holds it there. It returns the
// generation to settle, or nil when the row was dropped.
func (a *Archive) add(r *Row) *gen {
	if r.Session == "" || len(r.Lines) == 0 || r.First < 0 || r.Last < r.First {
		a.obs.Dropped(DropInvalid, 1)
		return nil
	}
	s := a.session(r.Session)
	if r.Header {
		g := s.gens[r.Version]
		if g == nil {
			g = &gen{s: s, version: r.Version}
			s.gens[r.Version] = g
		}
		switch {
		case g.header || g.hdr != nil:
			a.obs.Duplicates(1)
			return nil
		case g.isStream || g.size > 0:
			a.log.Warn("A session header arrived after its generation was archived without one; the header is not written",
				zap.String("session", s.id), zap.Int("version", r.Version), zap.String("file", g.path))
			a.obs.Dropped(DropHeaderLate, 1)
			return nil
		}
		g.hdr = r
		return g
	}
	g := a.route(s, r)
	if r.HasVersion && r.Version > g.inferred {
		g.inferred = r.Version
	}
	if r.HasInferred && r.Inferred > g.inferred {
		g.inferred = r.Inferred
	}
	a.hold(g, newItem(r))
	return g
}

// route picks the generation of an event row. A file's rows carry their
// header's version: they go to that generation, waiting for its header if
// it has not come yet. A live stream has no header: its rows, and a
// headerless session's bare rows, go to the session's stream.
func (a *Archive) route(s *session, r *Row) *gen {
	if !r.Live && r.HasVersion {
		if g := s.gens[r.Version]; g != nil {
			return g
		}
	}
	if s.stream != nil {
		return s.stream
	}
	if r.Live || !r.HasVersion {
		s.stream = &gen{s: s, isStream: true, version: -1}
		return s.stream
	}
	g := &gen{s: s, version: r.Version}
	s.gens[r.Version] = g
	return g
}

// settle writes what g can write now, then enforces MaxPendingRows.
func (a *Archive) settle(g *gen, now time.Time) error {
	if err := a.drain(g, now); err != nil {
		return err
	}
	g = a.current(g)
	for len(g.held) > a.opts.MaxPendingRows {
		if err := a.giveUp(g, CauseOverflow, now); err != nil {
			return err
		}
		g = a.current(g)
	}
	return nil
}

// giveUp stops waiting: a generation still waiting for its header becomes
// (or joins) the session's headerless stream, and the missing seqs before
// the lowest held row are skipped for good.
func (a *Archive) giveUp(g *gen, cause string, now time.Time) error {
	if len(g.held) == 0 {
		a.unwait(g)
		return nil
	}
	if g.awaitingHeader() {
		g = a.toStream(g)
	}
	low := g.lowest()
	skipped := int64(0)
	if low > g.next {
		skipped = low - g.next
		g.next = low
	}
	a.obs.GaveUp(cause, skipped)
	a.log.Debug("Gave up waiting for a session's missing rows", zap.String("session", g.s.id), zap.String("cause", cause),
		zap.Int64("skipped_seqs", skipped), zap.Int64("resume_seq", low))
	return a.drain(g, now)
}

// toStream turns a generation that waited in vain for its header into the
// session's headerless stream, or merges its rows into the stream.
func (a *Archive) toStream(g *gen) *gen {
	s := g.s
	if s.gens[g.version] == g {
		delete(s.gens, g.version)
	}
	a.unwait(g)
	if s.stream == nil {
		g.isStream = true
		if g.version > g.inferred {
			g.inferred = g.version
		}
		s.stream = g
		return g
	}
	a.merge(g, s.stream)
	return s.stream
}

// merge moves g's held rows into dst; g is not used again.
func (a *Archive) merge(g, dst *gen) {
	if g.inferred > dst.inferred {
		dst.inferred = g.inferred
	}
	a.unwait(g)
	for _, it := range g.held {
		a.pending--
		a.hold(dst, it)
	}
	g.held = nil
	g.into = dst
}

func (g *gen) lowest() int64 {
	low := int64(-1)
	for k := range g.held {
		if low < 0 || k < low {
			low = k
		}
	}
	return low
}

func (a *Archive) unwait(g *gen) {
	delete(a.waiting, g)
	g.waitSince = time.Time{}
}
