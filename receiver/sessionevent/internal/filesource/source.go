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

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/storageclient"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/glob"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// maxFrameOutput bounds a zstd frame's decompressed size.
const maxFrameOutput = 1 << 30

// Source is the file transport: a poller tailing the session files the
// include patterns match, each file read, delivered to next and
// checkpointed on its own.
type Source struct {
	cfg         Config
	maxLine     int
	set         receiver.Settings
	next        consumer.Logs
	obs         *receiverhelper.ObsReport
	tel         *metadata.TransportTelemetry
	now         func() time.Time
	logger      *zap.Logger
	patterns    []string
	checkpoints *checkpoint.Store
	files       map[string]*tailedFile
	tracked     atomic.Int64
	firstRun    bool
	zd          *zstd.Decoder

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns the file source of the receiver set describes: its section
// of the configuration, the longest row accepted, the next consumer, and
// the obsreport and counters of its transport.
func New(cfg Config, maxLine int, set receiver.Settings, next consumer.Logs, obs *receiverhelper.ObsReport, tel *metadata.TransportTelemetry) *Source {
	t := &Source{
		cfg: cfg, maxLine: maxLine, set: set, next: next, obs: obs, tel: tel, now: time.Now, logger: set.Logger,
		files: map[string]*tailedFile{},
	}
	for _, p := range cfg.Include {
		t.patterns = append(t.patterns, glob.Expand(p))
	}
	return t
}

// FilesTracked is the files_tracked gauge: the session files being
// tailed (0 without a file source).
func (t *Source) FilesTracked() int64 {
	if t == nil {
		return 0
	}
	return t.tracked.Load()
}

// Start opens the checkpoint storage (memory only without files::storage)
// and starts polling in a goroutine.
func (t *Source) Start(ctx context.Context, host component.Host) error {
	client, err := storageclient.OpenOptional(ctx, host, t.cfg.Storage, component.KindReceiver, t.set.ID, "files", metadata.Type.String())
	if err != nil {
		return err
	}
	t.checkpoints = checkpoint.NewStore(client, t.cfg.Storage != nil)
	started, err := t.checkpoints.Started(ctx)
	if err != nil {
		return err
	}
	t.firstRun = !started
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

// Shutdown stops polling and waits for the poll in progress (a batch being
// delivered is checkpointed only if delivery succeeded), then closes the
// storage client. It is safe without Start.
func (t *Source) Shutdown(ctx context.Context) error {
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
	if t.checkpoints != nil {
		if err := t.checkpoints.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		t.checkpoints = nil
	}
	return errors.Join(errs...)
}

// run polls until ctx is cancelled.
func (t *Source) run(ctx context.Context) {
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
func (t *Source) close() {
	if t.zd != nil {
		t.zd.Close()
		t.zd = nil
	}
}

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
