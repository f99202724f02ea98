package filesource

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/glob"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// poll globs the patterns, picks each session's highest generation, reads
// what every file gained, and forgets the files no longer selected.
func (t *Source) poll(ctx context.Context) {
	selected := sessionroot.SelectGenerations(glob.Files(t.patterns))
	var plain []*tailedFile
	for _, path := range selected {
		if ctx.Err() != nil {
			return
		}
		tf := t.track(ctx, path)
		switch {
		case tf == nil:
		case tf.zstd:
			t.read(ctx, tf) // one zstd decoder, one file at a time
		default:
			plain = append(plain, tf)
		}
	}
	t.readConcurrently(ctx, plain)
	t.forget(ctx, selected)
	if t.firstRun && ctx.Err() == nil {
		t.firstRun = false
		if err := t.checkpoints.MarkStarted(ctx); err != nil {
			t.logger.Warn("Could not store the first-poll marker", zap.Error(err))
		}
	}
}

// track returns the tailed file at path, discovering it if it is new (nil:
// it cannot be tailed now).
func (t *Source) track(ctx context.Context, path string) *tailedFile {
	if tf := t.files[path]; tf != nil {
		return tf
	}
	tf := t.discover(ctx, path)
	if tf != nil {
		t.files[path] = tf
		t.tracked.Add(1)
	}
	return tf
}

// forget stops tailing the files not selected any more. A file gone for
// good loses its checkpoint too; one superseded by a higher generation
// keeps it.
func (t *Source) forget(ctx context.Context, selected []string) {
	keep := make(map[string]bool, len(selected))
	for _, p := range selected {
		keep[p] = true
	}
	for path := range t.files {
		if keep[path] {
			continue
		}
		delete(t.files, path)
		t.tracked.Add(-1)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if err := t.checkpoints.Delete(ctx, path); err != nil {
				t.logger.Debug("Could not delete a checkpoint", zap.String("file", path), zap.Error(err))
			}
		}
	}
}

// readConcurrently reads the plain files, one more at once than the process
// has CPUs (a reader waiting for the pipeline leaves the CPUs to the
// others). Each file's state is its own (decoder, record tracker,
// checkpoint), and each file's rows still go downstream in order, one batch
// at a time; only different files overlap, so the decoding of one proceeds
// while another's batch is in the pipeline.
func (t *Source) readConcurrently(ctx context.Context, files []*tailedFile) {
	workers := min(runtime.GOMAXPROCS(0)+1, len(files))
	if workers <= 1 {
		for _, tf := range files {
			if ctx.Err() != nil {
				return
			}
			t.read(ctx, tf)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				t.read(ctx, files[i])
			}
		})
	}
	wg.Wait()
}

// discover starts tracking a file: from its stored checkpoint, else from
// its start — or, at the very first start with start_at: end, from its end.
func (t *Source) discover(ctx context.Context, path string) *tailedFile {
	tf := &tailedFile{path: path, zstd: strings.HasSuffix(path, ".zstd"), lastGrowth: time.Now(), garbageAt: -1}
	cp, found, err := t.checkpoints.Load(ctx, path)
	switch {
	case err != nil && !found:
		t.logger.Warn("Could not read a checkpoint", zap.String("file", path), zap.Error(err))
		return nil
	case err != nil:
		t.logger.Warn("Unreadable checkpoint; reading the file from its start", zap.String("file", path), zap.Error(err))
		return tf
	case found:
		tf.cp = cp
		return tf
	}
	if t.firstRun && t.cfg.StartAt == StartAtEnd {
		off, err := completeEnd(path, tf.zstd)
		if err != nil {
			t.logger.Warn("Could not find the end of a file", zap.String("file", path), zap.Error(err))
			return nil
		}
		tf.cp.Offset = off
	}
	return tf
}

// completeEnd is the end of the complete content of the file at path.
func completeEnd(path string, zstd bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return sessionroot.CompleteEnd(f, fi.Size(), zstd)
}
