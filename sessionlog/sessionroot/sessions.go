package sessionroot

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"
)

// Session is one session directory of a session root and the file a reader
// follows in it.
type Session struct {
	// ID is the session id the directory name encodes (docs/format.md §2.2), or the
	// name itself when it is no valid escape.
	ID string
	// Project is the project directory's name.
	Project string
	// Path is the session file, relative to the root, with "/" separators:
	// <project>/<escaped-id>/session[.vN].jsonl[.zstd].
	Path    string
	Version int
	Zstd    bool
	// Size and ModTime are the file's as listed.
	Size    int64
	ModTime time.Time
	// Client is the client whose session root under ClientsDir holds the
	// session, "" for the root's own (docs/operating.md, "Sharing a
	// collector").
	Client string
}

// List finds the sessions of a dsh session root, or of a session_archive
// root (the same layout): every <project>/<session>/ directory that holds
// generation files, each with the file SelectGenerations keeps
// (docs/format.md §2.1). Symbolic links are not followed and only regular files
// count, so nothing listed lies outside the root. A directory that cannot
// be read is skipped; the root itself must be readable. The session roots
// of named clients under ClientsDir are listed too, each session with its
// Client. The result is sorted by path.
func List(root string) ([]Session, error) {
	projects, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("session root %s: %w", root, err)
	}
	out := listProjects(root, "", "", projects)
	// The session roots of named clients (an archive's ClientsDir).
	clients, _ := os.ReadDir(filepath.Join(root, ClientsDir))
	for _, c := range clients {
		if !c.IsDir() {
			continue
		}
		client, ok := UnescapeSessionID(c.Name())
		if !ok {
			continue
		}
		croot := filepath.Join(root, ClientsDir, c.Name())
		projects, err := os.ReadDir(croot)
		if err != nil {
			continue
		}
		out = append(out, listProjects(croot, path.Join(ClientsDir, c.Name()), client, projects)...)
	}
	slices.SortFunc(out, func(a, b Session) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return out, nil
}

// listProjects lists the sessions of the project directories of one session
// root; prefix is the root's path under the listed root, client its client.
func listProjects(root, prefix, client string, projects []fs.DirEntry) []Session {
	var out []Session
	for _, p := range projects {
		if !p.IsDir() || (prefix == "" && p.Name() == ClientsDir) { // a symbolic link to a directory is not one
			continue
		}
		sessions, err := os.ReadDir(filepath.Join(root, p.Name()))
		if err != nil {
			continue
		}
		for _, s := range sessions {
			if !s.IsDir() {
				continue
			}
			if sess, ok := listSession(root, p.Name(), s.Name()); ok {
				sess.Client = client
				if prefix != "" {
					sess.Path = path.Join(prefix, sess.Path)
				}
				out = append(out, sess)
			}
		}
	}
	return out
}

// listSession reads one session directory: its generation files, and of
// them the one a reader follows.
func listSession(root, project, dir string) (Session, bool) {
	rel := path.Join(project, dir)
	entries, err := os.ReadDir(filepath.Join(root, project, dir))
	if err != nil {
		return Session{}, false
	}
	var gens []string
	infos := map[string]fs.FileInfo{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if _, _, ok := ParseFileName(e.Name()); !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		p := path.Join(rel, e.Name())
		gens = append(gens, p)
		infos[p] = info
	}
	if len(gens) == 0 {
		return Session{}, false
	}
	// One directory: SelectGenerations keeps exactly one of its files.
	chosen := SelectGenerations(gens)[0]
	version, zstd, _ := ParseFileName(path.Base(chosen))
	id, ok := UnescapeSessionID(dir)
	if !ok {
		id = dir
	}
	info := infos[chosen]
	return Session{ID: id, Project: project, Path: chosen, Version: version, Zstd: zstd,
		Size: info.Size(), ModTime: info.ModTime()}, true
}

// Content is the complete content of a session file as it was when opened:
// what lies past it is a row or frame still being written, or a torn tail.
type Content struct {
	*io.SectionReader
	f *os.File
}

// Close closes the file.
func (c *Content) Close() error { return c.f.Close() }

// OpenComplete opens the session file name (a Session's Path) inside root
// and returns its complete content (CompleteEnd at the file's size of the
// moment). Opening through root confines the name to it: no "..", absolute
// path or symbolic link leads out (os.Root).
func OpenComplete(root *os.Root, name string, zstd bool) (*Content, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", name)
	}
	var end int64
	if err == nil {
		end, err = CompleteEnd(f, fi.Size(), zstd)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Content{SectionReader: io.NewSectionReader(f, 0, end), f: f}, nil
}
