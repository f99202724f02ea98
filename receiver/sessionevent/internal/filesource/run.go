package filesource

import (
	"context"
	"errors"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/episode"
	"github.com/dshtrace/dshtrace/internal/storageclient"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/glob"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// maxFrameOutput bounds a zstd frame's decompressed size.
const maxFrameOutput = 1 << 30

// New returns the file source of the receiver set describes: its section
// of the configuration, the longest row accepted, the bounds its records
// are placed within, the next consumer, and the obsreport and counters of
// its transport.
func New(cfg Config, maxLine int, bounds turnmodel.Bounds, set receiver.Settings, next consumer.Logs, obs *receiverhelper.ObsReport, tel *metadata.TransportTelemetry) *Source {
	t := &Source{
		cfg: cfg, maxLine: maxLine, bounds: bounds, set: set, next: next, obs: obs, tel: tel, now: time.Now, logger: set.Logger,
		files: map[string]*tailedFile{},
	}
	t.refusing = episode.New(set.Logger,
		"The pipeline refuses session rows from the tailed files; each file waits and retries (backing off up to 30s), nothing is skipped",
		"The pipeline accepts session rows from the tailed files again")
	t.storing = episode.New(set.Logger,
		"Cannot store read checkpoints: the files are not read on until their checkpoints are stored (a restart meanwhile delivers the unstored rows again)",
		"Read checkpoints are stored again; the files are read on")
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
	t.tel.StateWritesWatched(ctx)
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
