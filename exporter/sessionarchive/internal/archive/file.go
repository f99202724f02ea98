package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// Permissions of what the archive creates: session logs hold prompts and
// tool payloads, personal data, so only the collector's user reads them.
const (
	dirPerm  = 0o700
	filePerm = 0o600
)

// load builds the state of a session touched for the first time from its
// files on disk: every generation file under any project directory, each
// resumed after its last complete row (a torn tail is cut off first).
func (a *Archive) load(id string) *session {
	s := &session{id: id, esc: sessionroot.EscapeSessionID(clientid.Session(id)), gens: map[int]*gen{}}
	root, err := a.rootOf(id)
	if err != nil {
		return s // its rows are dropped when its file cannot be created
	}
	projects, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) || root == a.opts.Root {
			a.log.Warn("Could not list the archive root", zap.String("root", root), zap.Error(err))
		}
		return s
	}
	zstd := a.opts.Compression == CompressionZstd
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(root, p.Name(), s.esc)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			v, z, ok := sessionroot.ParseFileName(e.Name())
			if ok && z == zstd && e.Type().IsRegular() {
				a.loadFile(s, filepath.Join(dir, e.Name()), v)
			}
		}
	}
	// A headerless file continues the session's stream (the highest, if
	// several).
	for v, g := range s.gens {
		if !g.header && g.size > 0 && (s.stream == nil || v > s.stream.version) {
			s.stream = g
		}
	}
	if s.stream != nil {
		s.stream.isStream = true
		s.stream.inferred = s.stream.version
	}
	return s
}

// rootOf is the session root a session's files go under: the archive root,
// or for a session of a named client (its key, clientid.Key) that
// client's root under sessionroot.ClientsDir.
func (a *Archive) rootOf(key string) (string, error) {
	return sessionroot.ClientRoot(a.opts.Root, clientid.Client(key))
}

// sessionDir is the directory of a session (its key) whose header has cwd.
func (a *Archive) sessionDir(cwd, key string) (string, error) {
	root, err := a.rootOf(key)
	if err != nil {
		return "", err
	}
	return sessionroot.SessionDir(root, cwd, clientid.Session(key))
}

// loadFile takes an archived file of generation v into session s: where
// it ends (a torn tail cut off), its header and last seq.
func (a *Archive) loadFile(s *session, path string, v int) {
	info, err := scanFile(path)
	if err != nil {
		a.log.Warn("Could not read an archived session file; it is left alone", zap.String("file", path), zap.Error(err))
		return
	}
	if info.truncated > 0 {
		a.log.Info("Cut a torn tail off an archived session file", zap.String("file", path),
			zap.Int64("bytes", info.truncated))
	}
	key := v
	if info.header {
		key = info.version
	}
	if s.gens[key] != nil {
		a.log.Warn("Two archived files hold one session generation; the first one is continued",
			zap.String("session", s.id), zap.String("continued", s.gens[key].path), zap.String("ignored", path))
		return
	}
	s.gens[key] = &gen{s: s, version: key, path: path, header: info.header, size: info.size, next: info.next}
}

// awaitingHeader: a file's generation whose header has not come yet.
func (g *gen) awaitingHeader() bool { return !g.isStream && !g.header && g.hdr == nil }

// writeHeader creates a header-backed generation's file (in the project
// directory of the header's cwd) and writes the header as its first row.
func (a *Archive) writeHeader(g *gen) error {
	hdr := g.hdr
	if g.path == "" {
		dir, err := a.sessionDir(hdr.Cwd, g.s.id)
		if err != nil {
			return err
		}
		if err := a.create(g, dir, g.version); err != nil {
			return err
		}
	}
	g.hdr = nil
	if g.size > 0 {
		// The file exists already (made by someone else since the session
		// was loaded): its first row decides.
		if g.header {
			a.obs.Duplicates(1)
		} else {
			a.obs.Dropped(DropHeaderLate, 1)
		}
		return nil
	}
	if err := a.writeLines(g, hdr.Lines[:1]); err != nil {
		g.hdr = hdr
		return err
	}
	g.header = true
	return nil
}

// createStream creates the file of a headerless stream at its first
// write, named by the version known then. If the session has a
// header-backed generation of that version, the stream is the same log
// (dsh identifies an event by session, format version and seq) and joins
// it; a generation of that version still waiting for its header joins the
// stream instead.
func (a *Archive) createStream(g *gen) (*gen, error) {
	s := g.s
	v := max(g.inferred, 0)
	path := ""
	if o := s.gens[v]; o != nil && o != g {
		if o.header || o.hdr != nil || o.size > 0 {
			a.merge(g, o)
			o.isStream = !o.header && o.hdr == nil
			s.stream = o
			return o, nil
		}
		path = o.path // an empty file, found on disk
		a.merge(o, g)
	}
	g.version = v
	s.gens[v] = g
	if path != "" {
		g.path = path
		return g, nil
	}
	dir, err := a.sessionDir("", s.id)
	if err != nil {
		return g, err
	}
	return g, a.create(g, dir, v)
}

// create makes dir and the generation file in it. A file that exists
// with content already (a race with another writer) is adopted as found.
func (a *Archive) create(g *gen, dir string, version int) error {
	path := filepath.Join(dir, sessionroot.FileName(version, a.opts.Compression == CompressionZstd))
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if fi.Size() > 0 {
		f.Close()
		info, err := scanFile(path)
		if err != nil {
			return err
		}
		g.path, g.header, g.size, g.next = path, info.header, info.size, info.next
		return nil
	}
	g.path, g.size = path, 0
	g.f = f
	g.fElem = a.files.PushBack(g)
	a.limitFiles()
	a.obs.FileCreated()
	// New directory entries become durable with their directories: the
	// session's, and each up to the root (a client's root adds two).
	root := filepath.Clean(a.opts.Root)
	for d := dir; ; d = filepath.Dir(d) {
		a.dirs[d] = struct{}{}
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	return nil
}

// open returns g's file, opening it if needed within MaxOpenFiles.
func (a *Archive) open(g *gen) (*os.File, error) {
	if g.f != nil {
		a.files.MoveToBack(g.fElem)
		return g.f, nil
	}
	f, err := os.OpenFile(g.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	g.f = f
	g.fElem = a.files.PushBack(g)
	a.limitFiles()
	return f, nil
}

func (a *Archive) limitFiles() {
	for a.files.Len() > a.opts.MaxOpenFiles {
		a.closeFile(a.files.Front().Value.(*gen))
	}
}

// closeFile closes g's file, syncing it first if it was written to.
func (a *Archive) closeFile(g *gen) {
	if g.f == nil {
		return
	}
	if _, dirty := a.dirty[g]; dirty && a.opts.Fsync != FsyncNone {
		if err := g.f.Sync(); err != nil {
			a.log.Warn("Could not sync an archived session file", zap.String("file", g.path), zap.Error(err))
		}
	}
	delete(a.dirty, g)
	if err := g.f.Close(); err != nil {
		a.log.Warn("Could not close an archived session file", zap.String("file", g.path), zap.Error(err))
	}
	a.files.Remove(g.fElem)
	g.f, g.fElem = nil, nil
}

// writeLines appends lines, each with its newline: one write (one zstd
// frame), or under FsyncAlways one synced write per line. After a failed
// write the file's state is read back from disk before the next one.
func (a *Archive) writeLines(g *gen, lines [][]byte) error {
	if a.opts.Fsync == FsyncAlways {
		for _, l := range lines {
			if err := a.writeBytes(g, append(append(make([]byte, 0, len(l)+1), l...), '\n'), 1); err != nil {
				return err
			}
		}
		return nil
	}
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	data := make([]byte, 0, n)
	for _, l := range lines {
		data = append(append(data, l...), '\n')
	}
	return a.writeBytes(g, data, int64(len(lines)))
}

func (a *Archive) writeBytes(g *gen, data []byte, rows int64) error {
	f, err := a.open(g)
	if err != nil {
		return err
	}
	out := data
	if a.enc != nil {
		out = a.enc.EncodeAll(data, make([]byte, 0, len(data)/2+64))
	}
	n, err := f.Write(out)
	if err != nil {
		// Leave no partial row behind; if that fails too, the next write
		// rescans the file, which cuts the torn tail off.
		if n > 0 {
			_ = f.Truncate(g.size)
		}
		a.closeFile(g)
		g.broken = true
		return fmt.Errorf("write %s: %w", g.path, err)
	}
	g.size += int64(n)
	a.obs.Written(rows, int64(n))
	if a.opts.Fsync == FsyncAlways {
		if err := f.Sync(); err != nil {
			g.broken = true
			return fmt.Errorf("sync %s: %w", g.path, err)
		}
		return nil
	}
	a.dirty[g] = struct{}{}
	return nil
}

// reload reads a generation's state back from its file after a failed
// write.
func (a *Archive) reload(g *gen) error {
	a.closeFile(g)
	info, err := scanFile(g.path)
	if err != nil {
		return err
	}
	g.header, g.size, g.next, g.broken = info.header, info.size, info.next, false
	a.prune(g)
	return nil
}

// prune drops held rows that the file already has.
func (a *Archive) prune(g *gen) {
	for k, it := range g.held {
		if k >= g.next {
			continue
		}
		delete(g.held, k)
		a.pending--
		if t := it.tail(g.next); t != nil {
			a.hold(g, t)
		} else {
			a.obs.Duplicates(1)
		}
	}
}

// sync makes what was written since the last sync durable (FsyncBatch).
func (a *Archive) sync() error {
	if a.opts.Fsync == FsyncNone {
		clear(a.dirty)
		clear(a.dirs)
		return nil
	}
	var errs []error
	for g := range a.dirty {
		if g.f != nil {
			if err := g.f.Sync(); err != nil {
				g.broken = true
				errs = append(errs, fmt.Errorf("sync %s: %w", g.path, err))
			}
		}
		delete(a.dirty, g)
	}
	for d := range a.dirs {
		if err := syncDir(d); err != nil {
			a.log.Debug("Could not sync a directory", zap.String("dir", d), zap.Error(err))
		}
		delete(a.dirs, d)
	}
	return errors.Join(errs...)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// dropIfPath drops everything g holds when its file can never be made
// (a path error that retrying cannot fix) and reports whether it did.
func (a *Archive) dropIfPath(g *gen, err error) bool {
	if !errors.Is(err, sessionroot.ErrOutsideRoot) && !errors.Is(err, syscall.ENAMETOOLONG) &&
		!errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.EISDIR) && !errors.Is(err, syscall.EINVAL) {
		return false
	}
	n := int64(len(g.held))
	if g.hdr != nil {
		n++
		g.hdr = nil
	}
	a.pending -= len(g.held)
	g.held = nil
	a.unwait(g)
	a.log.Error("Cannot create an archived session's file; its rows are dropped", zap.String("session", g.s.id), zap.Error(err))
	a.obs.Dropped(DropPath, n)
	return true
}
