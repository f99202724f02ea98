package filestorage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// fileStorage wraps collector-contrib's file storage: GetClient sets a
// damaged file aside and opens a fresh one.
type fileStorage struct {
	extension.Extension
	inner  storage.Extension
	dir    string
	logger *zap.Logger
}

var _ storage.Extension = (*fileStorage)(nil)

// GetClient opens the storage of one component's purpose (name). See the
// package documentation for what happens to a file that cannot be opened.
func (s *fileStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	path := s.fileOf(kind, id, name)
	what := holds(kind, id, name)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
		// bbolt would take an empty file for a new database and say
		// nothing; a file the extension made is never empty, so its state
		// is gone: set aside and said like any other damage.
		return s.setAside(ctx, kind, id, name, path, what, errors.New("the file is empty"))
	}
	client, err := s.open(ctx, kind, id, name)
	if err == nil {
		return client, nil
	}
	switch {
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("storage file %s (%s) cannot be opened: %w; give the collector's user read and write access to it "+
			"(or move it away to start without that state)", path, what.state, err)
	case errors.Is(err, bbolt.ErrTimeout):
		return nil, fmt.Errorf("storage file %s (%s) is locked by another process: %w; is another collector running on the same directory?",
			path, what.state, err)
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EIO):
		return nil, fmt.Errorf("storage file %s (%s): %w", path, what.state, err)
	}
	if _, serr := os.Stat(path); serr != nil {
		return nil, fmt.Errorf("storage file %s (%s): %w", path, what.state, err) // nothing there to set aside
	}
	return s.setAside(ctx, kind, id, name, path, what, err)
}

// setAside renames a damaged file (damage says how it is damaged), logs
// the one line that says so, and opens a fresh file in its place.
func (s *fileStorage) setAside(ctx context.Context, kind component.Kind, id component.ID, name, path string, what held, damage error) (storage.Client, error) {
	err := damage
	aside := path + ".damaged-" + time.Now().UTC().Format("20060102T150405.000Z")
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, fmt.Errorf("storage file %s (%s) is damaged (%w) and cannot be set aside: %v; move it away by hand", path, what.state, err, rerr)
	}
	s.logger.Error("Damaged storage file set aside; starting with a fresh one: "+what.lost,
		zap.String("file", path), zap.String("set_aside_as", aside), zap.String("component", kindName(kind)+"/"+id.String()),
		zap.String("holds", what.state), zap.NamedError("damage", err))
	return s.open(ctx, kind, id, name)
}

// open asks the wrapped extension for the client; a panic while it opens
// the file (a database too damaged for bbolt to read) is an error.
func (s *fileStorage) open(ctx context.Context, kind component.Kind, id component.ID, name string) (client storage.Client, err error) {
	defer func() {
		if r := recover(); r != nil {
			client, err = nil, fmt.Errorf("reading the database panicked: %v", r)
		}
	}()
	return s.inner.GetClient(ctx, kind, id, name)
}

// fileOf is the file collector-contrib's file storage keeps the client in
// (its naming: kind_type_name[_purpose], unsafe characters escaped as ~XXXX).
func (s *fileStorage) fileOf(kind component.Kind, id component.ID, name string) string {
	raw := kindName(kind) + "_" + id.Type().String() + "_" + id.Name()
	if name != "" {
		raw += "_" + name
	}
	return filepath.Join(s.dir, sanitize(raw))
}

func kindName(k component.Kind) string {
	switch k {
	case component.KindReceiver:
		return "receiver"
	case component.KindProcessor:
		return "processor"
	case component.KindExporter:
		return "exporter"
	case component.KindExtension:
		return "extension"
	case component.KindConnector:
		return "connector"
	}
	return "other"
}

func sanitize(name string) string {
	var b strings.Builder
	for _, c := range name {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' {
			b.WriteRune(c)
		} else {
			fmt.Fprintf(&b, "~%04X", c)
		}
	}
	return b.String()
}
