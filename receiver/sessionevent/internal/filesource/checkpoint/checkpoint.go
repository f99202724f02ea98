// Package checkpoint is where the file source resumes reading a session
// file, and whether it may: what is stored per file (the offset of the
// next unread line or frame, the highest seq emitted per session), how it
// is stored, and how a file is recognized as the one its checkpoint
// describes — the same device and inode, the same bytes just before the
// offset.
package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

const (
	// keyPrefix prefixes a file's key in the storage client.
	keyPrefix = "file/"
	// startedKey marks a storage that has seen a first poll (start_at).
	startedKey = "files/started"
	// tailBytes is how many bytes before the offset a checkpoint keeps to
	// notice a file rewritten in place.
	tailBytes = 32
)

// Checkpoint is what is stored per file.
type Checkpoint struct {
	// Offset: plain, the byte after the last consumed line; zstd, the start
	// of the next frame to decode. Everything before it was delivered.
	Offset int64 `json:"offset"`
	// ID identifies the file (device and inode) to notice a replacement.
	ID string `json:"id,omitempty"`
	// Tail are the bytes just before Offset, to notice a rewrite in place.
	Tail []byte `json:"tail,omitempty"`
	// Session is the session of the file's bare rows: the header's id, else
	// the unescaped directory name.
	Session string `json:"session,omitempty"`
	// HWM is the highest seq emitted, per session.
	HWM map[string]int64 `json:"hwm,omitempty"`
	// Header: the header row was emitted.
	Header bool `json:"header,omitempty"`
}

// Clone is a copy sharing nothing with c.
func (c Checkpoint) Clone() Checkpoint {
	c.HWM = maps.Clone(c.HWM)
	c.Tail = bytes.Clone(c.Tail)
	return c
}

// SameProgress reports whether a and b record the same rows emitted
// (session, header, high-water marks), wherever their offsets are.
func SameProgress(a, b Checkpoint) bool {
	return a.Session == b.Session && a.Header == b.Header && maps.Equal(a.HWM, b.HWM)
}

// Cover raises session's high-water mark over a row whose seqs run from
// first to last, and reports whether the row was emitted before: its first
// seq is at or under the mark it raised.
func (c *Checkpoint) Cover(session string, first, last int64) (emitted bool) {
	hwm, seen := c.HWM[session]
	if !seen || last > hwm {
		if c.HWM == nil {
			c.HWM = map[string]int64{}
		}
		c.HWM[session] = last
	}
	return seen && first <= hwm
}

// Rewritten reports whether f holds other bytes just before the offset
// than when the checkpoint was taken (or cannot be read there): the file
// was rewritten in place.
func (c *Checkpoint) Rewritten(f io.ReaderAt) bool {
	n := int64(len(c.Tail))
	if n == 0 || c.Offset < n {
		return false
	}
	got := make([]byte, n)
	_, err := f.ReadAt(got, c.Offset-n)
	return err != nil || !bytes.Equal(got, c.Tail)
}

// KeepTail remembers the bytes of f just before the offset (none if they
// cannot be read).
func (c *Checkpoint) KeepTail(f io.ReaderAt) {
	c.Tail = nil
	if k := min(int64(tailBytes), c.Offset); k > 0 {
		tail := make([]byte, k)
		if _, err := f.ReadAt(tail, c.Offset-k); err == nil {
			c.Tail = tail
		}
	}
}

// Store keeps the checkpoints of a file source in a storage client.
type Store struct {
	client storage.Client
	// persist: the client is a storage extension's, so checkpoints are
	// written; otherwise they are only kept in memory by the caller.
	persist bool
}

// NewStore keeps checkpoints in client; persist says whether it is a real
// storage extension's (a nop client's Set is skipped).
func NewStore(client storage.Client, persist bool) *Store {
	return &Store{client: client, persist: persist}
}

// Load returns the checkpoint stored for the file at path. found: one is
// stored; an error with found set is an unreadable one (cp is zero).
func (s *Store) Load(ctx context.Context, path string) (cp Checkpoint, found bool, err error) {
	b, err := s.client.Get(ctx, keyPrefix+path)
	if err != nil || b == nil {
		return Checkpoint{}, false, err
	}
	if err := json.Unmarshal(b, &cp); err != nil {
		return Checkpoint{}, true, fmt.Errorf("unreadable checkpoint: %w", err)
	}
	return cp, true, nil
}

// Save stores the checkpoint of the file at path.
func (s *Store) Save(ctx context.Context, path string, cp Checkpoint) error {
	if !s.persist {
		return nil
	}
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return s.client.Set(ctx, keyPrefix+path, b)
}

// Delete forgets the checkpoint of the file at path.
func (s *Store) Delete(ctx context.Context, path string) error {
	return s.client.Delete(ctx, keyPrefix+path)
}

// Started reports whether a first poll was made with this storage: then
// start_at no longer applies.
func (s *Store) Started(ctx context.Context) (bool, error) {
	b, err := s.client.Get(ctx, startedKey)
	return b != nil, err
}

// MarkStarted records that a first poll was made.
func (s *Store) MarkStarted(ctx context.Context) error {
	return s.client.Set(ctx, startedKey, []byte("1"))
}

// Close closes the storage client.
func (s *Store) Close(ctx context.Context) error { return s.client.Close(ctx) }
