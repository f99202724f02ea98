package sessionevent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// The file source tails dsh session roots (docs/format.md §2).
//
// It is a small poller of its own rather than the contrib stanza
// fileconsumer: fileconsumer reads plain and gzip files only, so zstd
// generations — dsh's default encoding — would need a second reader and a
// second checkpoint scheme anyway; it identifies files by their first bytes,
// which dsh headers make alike; and it advances offsets after a failed
// delivery. One poller reads plain and zstd files the same way: rows are
// cut at newlines (plain) or decoded frame by frame (zstd), and a file's
// checkpoint — the offset of the next unread line or frame, plus the
// highest seq emitted — is written through the storage extension only after
// the next consumer accepted the rows before it.
//
// Restart: a file that grows again is first re-read from its start up to
// the checkpoint without emitting anything, which restores the decoder's
// format and the tracker's turn and step — the records' trace and span ids
// come out as if the collector had never stopped — and then read on.
//
// Truncation and rewrites (dsh truncates a crashed file back to its last
// committed record, then appends): a file shorter than its checkpoint, with
// other bytes before it, or another inode, is read again from the start,
// and rows up to the highest seq already emitted are dropped as duplicates.

const (
	// batchRows and batchBytes bound one delivery.
	batchRows  = 1000
	batchBytes = 4 << 20
	// idleEvict drops the in-memory reader of a file that did not grow for
	// so long; it is rebuilt by re-reading when the file grows again.
	idleEvict = 10 * time.Minute
	// maxBackoff bounds the wait after a refused delivery.
	maxBackoff = 30 * time.Second
	// checkpointPrefix prefixes a file's key in the storage client.
	checkpointPrefix = "file/"
	// startedKey marks a storage that has seen a first poll (start_at).
	startedKey = "files/started"
	// tailBytes is how many bytes before the offset the checkpoint keeps to
	// notice a file rewritten in place.
	tailBytes = 32
	// maxFrameOutput bounds a zstd frame's decompressed size.
	maxFrameOutput = 1 << 30
)

// checkpoint is what is stored per file.
type checkpoint struct {
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

func (c checkpoint) clone() checkpoint {
	c.HWM = maps.Clone(c.HWM)
	c.Tail = bytes.Clone(c.Tail)
	return c
}

// tailedFile is one file being tailed.
type tailedFile struct {
	path string
	zstd bool
	// cp is the committed checkpoint.
	cp   checkpoint
	live *liveState
	// seenSize is the size at the last read.
	seenSize   int64
	lastGrowth time.Time
	retryAt    time.Time
	backoff    time.Duration
	// dead: the file needs a newer reader (unsupported version); it is
	// read again only once rewritten.
	dead bool
	// garbageAt is the offset of the undecodable bytes last reported.
	garbageAt int64
}

// liveState is the in-memory reader of a file: the decoder's and the
// tracker's state at pos, and the checkpoint the next delivery commits.
type liveState struct {
	dec *sessionlog.RowDecoder
	// arena holds the rows being handled while a read of the file is under
	// way (borrowed from fileArenas for it): a row is done with once it is
	// handled (handleRow), so the arena is reset every arenaRows rows (one
	// reset per row cost more than the clearing it does) and when the read
	// ends. arenaRows counts the rows in it.
	arena     *sessionlog.Arena
	arenaRows int
	tracker   *logrecord.Tracker
	line      int
	pos       int64
	// replayUntil: rows ending at or before it were delivered before; they
	// only feed the decoder and the tracker.
	replayUntil int64
	skipping    bool
	carry       []byte
	carryFrom   int64
	pending     checkpoint
	// scratch receives the records of rows only followed, never sent.
	scratch plog.LogRecordSlice
	// owned holds the wrapped rows' session ids as strings of their own,
	// lastOwned the one met last (own).
	owned     map[string]string
	lastOwned string
}

// fileSource is the file transport: a poller tailing the session files
// include matches, each file read, delivered to next and checkpointed on
// its own.
type fileSource struct {
	cfg      FileConfig
	maxLine  int
	set      receiver.Settings
	next     consumer.Logs
	obs      *receiverhelper.ObsReport
	tel      *metadata.TransportTelemetry
	now      func() time.Time
	logger   *zap.Logger
	patterns []string
	client   storage.Client
	// persist: client is a real storage (files::storage is set), so
	// checkpoints are written, not only kept.
	persist  bool
	files    map[string]*tailedFile
	tracked  atomic.Int64
	firstRun bool
	zd       *zstd.Decoder

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newFileSource(cfg FileConfig, maxLine int, set receiver.Settings, next consumer.Logs) (*fileSource, error) {
	obs, err := newObsReport(set, metadata.TransportFile)
	if err != nil {
		return nil, err
	}
	t := &fileSource{
		cfg: cfg, maxLine: maxLine, set: set, next: next, obs: obs, now: time.Now, logger: set.Logger,
		files: map[string]*tailedFile{},
	}
	for _, p := range cfg.Include {
		t.patterns = append(t.patterns, expandPattern(p))
	}
	return t, nil
}

// filesTracked is the files_tracked gauge (0 without a file source).
func (t *fileSource) filesTracked() int64 {
	if t == nil {
		return 0
	}
	return t.tracked.Load()
}

// start opens the checkpoint storage (memory only without files::storage)
// and starts polling in a goroutine.
func (t *fileSource) start(ctx context.Context, host component.Host) error {
	client, err := openStorage(ctx, host, t.cfg.Storage, t.set.ID, "files")
	if err != nil {
		return err
	}
	t.client, t.persist = client, t.cfg.Storage != nil
	b, err := client.Get(ctx, startedKey)
	if err != nil {
		return err
	}
	t.firstRun = b == nil
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxFrameOutput),
		zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return err
	}
	t.zd = zd
	t.logger.Info("Tailing dsh session files", zap.Strings("include", t.patterns), zap.String("start_at", t.cfg.StartAt))
	runCtx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.wg.Go(func() { t.run(runCtx) })
	return nil
}

// shutdown stops polling and waits for the poll in progress (a batch being
// delivered is checkpointed only if delivery succeeded), then closes the
// storage client. It is safe without start.
func (t *fileSource) shutdown(ctx context.Context) error {
	if t.cancel != nil {
		t.cancel()
	}
	var errs []error
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		t.close()
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	if t.client != nil {
		if err := t.client.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		t.client = nil
	}
	return errors.Join(errs...)
}

// run polls until ctx is cancelled.
func (t *fileSource) run(ctx context.Context) {
	tick := time.NewTicker(t.cfg.PollInterval)
	defer tick.Stop()
	for {
		t.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// close releases the zstd decoder once run has returned.
func (t *fileSource) close() {
	if t.zd != nil {
		t.zd.Close()
		t.zd = nil
	}
}

// poll globs the patterns, picks each session's highest generation, and
// reads what every file gained.
func (t *fileSource) poll(ctx context.Context) {
	selected := sessionroot.SelectGenerations(globFiles(t.patterns))
	var plain []*tailedFile
	for _, path := range selected {
		if ctx.Err() != nil {
			return
		}
		tf := t.files[path]
		if tf == nil {
			tf = t.discover(ctx, path)
			if tf == nil {
				continue
			}
			t.files[path] = tf
			t.tracked.Add(1)
		}
		if tf.zstd {
			t.read(ctx, tf) // one zstd decoder, one file at a time
		} else {
			plain = append(plain, tf)
		}
	}
	t.readConcurrently(ctx, plain)
	keep := map[string]bool{}
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
			// Gone for good: so is its checkpoint. (A file superseded by a
			// higher generation keeps it.)
			if err := t.client.Delete(ctx, checkpointPrefix+path); err != nil {
				t.logger.Debug("Could not delete a checkpoint", zap.String("file", path), zap.Error(err))
			}
		}
	}
	if t.firstRun && ctx.Err() == nil {
		t.firstRun = false
		if err := t.client.Set(ctx, startedKey, []byte("1")); err != nil {
			t.logger.Warn("Could not store the first-poll marker", zap.Error(err))
		}
	}
}

// readConcurrently reads the plain files, one more at once than the process
// has CPUs (a reader waiting for the pipeline leaves the CPUs to the
// others). Each file's state is its own (decoder, record tracker,
// checkpoint), and each file's rows still go downstream in order, one batch
// at a time; only different files overlap, so the decoding of one proceeds
// while another's batch is in the pipeline.
func (t *fileSource) readConcurrently(ctx context.Context, files []*tailedFile) {
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
func (t *fileSource) discover(ctx context.Context, path string) *tailedFile {
	tf := &tailedFile{path: path, zstd: strings.HasSuffix(path, ".zstd"), lastGrowth: time.Now(), garbageAt: -1}
	b, err := t.client.Get(ctx, checkpointPrefix+path)
	if err != nil {
		t.logger.Warn("Could not read a checkpoint", zap.String("file", path), zap.Error(err))
		return nil
	}
	if b != nil {
		if err := json.Unmarshal(b, &tf.cp); err != nil {
			t.logger.Warn("Unreadable checkpoint; reading the file from its start", zap.String("file", path), zap.Error(err))
			tf.cp = checkpoint{}
		}
		return tf
	}
	if t.firstRun && t.cfg.StartAt == startAtEnd {
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
