package sessionevent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/storageclient"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

// Transports, as obsreport and our own metrics name them.
const (
	transportHTTP = "http"
	transportFile = "file"
)

// sessionReceiver is the session_event receiver: an HTTP source and a file
// source, both turning physical session-log rows into the log records of
// docs/design.md §3 through logrecord.Tracker.
type sessionReceiver struct {
	cfg  *Config
	set  receiver.Settings
	next consumer.Logs
	obs  map[string]*receiverhelper.ObsReport
	tel  *metadata.Telemetry
	now  func() time.Time

	attrHTTP, attrFile metric.MeasurementOption

	// HTTP source.
	srv       *http.Server
	addr      net.Addr
	maxBody   int64
	dedup     *dedupStore
	trackerMu sync.Mutex
	tracker   *logrecord.Tracker

	// File source.
	tailer *tailer

	clients []storage.Client
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newReceiver(cfg *Config, set receiver.Settings, next consumer.Logs, obs map[string]*receiverhelper.ObsReport) (*sessionReceiver, error) {
	r := &sessionReceiver{
		cfg: cfg, set: set, next: next, obs: obs, now: time.Now,
		attrHTTP: metric.WithAttributes(attribute.String("transport", transportHTTP)),
		attrFile: metric.WithAttributes(attribute.String("transport", transportFile)),
		dedup:    newDedupStore(defaultDedupSessions, set.Logger),
		tracker:  logrecord.NewTracker(defaultDedupSessions),
	}
	if f := cfg.Files.Get(); f != nil {
		r.tailer = newTailer(r, *f)
	}
	tel, err := metadata.NewTelemetry(set.TelemetrySettings, metadata.Gauges{
		FilesTracked: func() int64 {
			if r.tailer == nil {
				return 0
			}
			return r.tailer.tracked.Load()
		},
		DedupSessions: r.dedup.len,
	})
	if err != nil {
		return nil, err
	}
	r.tel = tel
	return r, nil
}

// Start starts the configured sources. It does not block: the server and
// the tailer run in goroutines.
func (r *sessionReceiver) Start(ctx context.Context, host component.Host) error {
	if r.cfg.HTTP.Get() != nil {
		if id := r.cfg.httpStorage(); id != nil {
			c, err := storageClient(ctx, host, *id, r.set.ID, "http")
			if err != nil {
				return err
			}
			r.clients = append(r.clients, c)
			if err := r.dedup.load(ctx, c, r.restorePosition); err != nil {
				return fmt.Errorf("session_event: load the dedup state: %w", err)
			}
		}
	}
	if r.tailer != nil {
		client := storage.NewNopClient()
		id := r.cfg.Files.Get().Storage
		if id != nil {
			c, err := storageClient(ctx, host, *id, r.set.ID, "files")
			if err != nil {
				return err
			}
			r.clients = append(r.clients, c)
			client = c
		}
		if err := r.tailer.start(ctx, client, id != nil); err != nil {
			return err
		}
	}
	if err := r.startHTTP(ctx, host); err != nil {
		return err
	}
	if r.tailer != nil {
		runCtx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.wg.Go(func() { r.tailer.run(runCtx) })
	}
	return nil
}

// storageClient opens the receiver's client name on storage extension id.
func storageClient(ctx context.Context, host component.Host, id, self component.ID, name string) (storage.Client, error) {
	return storageclient.Open(ctx, host, id, component.KindReceiver, self, name, "session_event")
}

// Shutdown stops the HTTP server (letting requests in flight finish), then
// the tailer (a batch being delivered is not checkpointed unless delivery
// succeeded), then closes the storage clients. It is safe without Start.
func (r *sessionReceiver) Shutdown(ctx context.Context) error {
	var errs []error
	if r.srv != nil {
		if err := r.srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if r.cancel != nil {
		r.cancel()
	}
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		if r.tailer != nil {
			r.tailer.close()
		}
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	for _, c := range r.clients {
		if err := c.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	r.clients = nil
	if err := r.tel.Shutdown(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
