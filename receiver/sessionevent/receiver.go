package sessionevent

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// placementBounds are the bounds within which both transports place their
// records (internal/placement): the turn_state connector's defaults, so at
// those the records name the spans the connector emits. The receiver has
// no keys of its own for them.
var placementBounds = turnmodel.DefaultBounds()

// sessionReceiver is the session_event receiver: a thin adapter that builds
// the configured transports — the HTTP source (internal/httpsource) and the
// file source (internal/filesource) — and starts and stops them. Each
// transport has its own next consumer handle, its own obsreport, its own
// self-telemetry handle and its own storage client, and turns physical
// session-log rows into the log records of docs/design.md §3 through
// logrecord.Tracker within placementBounds; they share nothing else.
type sessionReceiver struct {
	http  *httpsource.Source // nil: not configured
	files *filesource.Source // nil: not configured
	tel   *metadata.Telemetry
}

func newReceiver(cfg *Config, set receiver.Settings, next consumer.Logs) (*sessionReceiver, error) {
	tel, err := metadata.NewTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	r := &sessionReceiver{tel: tel}
	if cfg.KafkaPartitions > 0 {
		next = newPartitioned(next, cfg.KafkaPartitions)
	}
	if hc := cfg.HTTP.Get(); hc != nil {
		obs, err := newObsReport(set, metadata.TransportHTTP)
		if err != nil {
			return nil, err
		}
		c := *hc
		c.Storage = cfg.httpStorage()
		r.http = httpsource.New(c, cfg.MaxLineBytes, placementBounds, set, next, obs, tel.ForTransport(metadata.TransportHTTP))
	}
	if fc := cfg.Files.Get(); fc != nil {
		obs, err := newObsReport(set, metadata.TransportFile)
		if err != nil {
			return nil, err
		}
		r.files = filesource.New(*fc, cfg.MaxLineBytes, placementBounds, set, next, obs, tel.ForTransport(metadata.TransportFile))
	}
	// The gauges observe the transports, so they come last.
	if err := tel.ObserveGauges(metadata.Gauges{
		FilesTracked:  r.files.FilesTracked,
		DedupSessions: r.http.DedupSessions,
	}); err != nil {
		return nil, err
	}
	return r, nil
}

// Start starts the configured transports. It does not block: the HTTP
// server and the file poller run in goroutines.
func (r *sessionReceiver) Start(ctx context.Context, host component.Host) error {
	if r.http != nil {
		if err := r.http.Start(ctx, host); err != nil {
			return err
		}
	}
	if r.files != nil {
		if err := r.files.Start(ctx, host); err != nil {
			return err
		}
	}
	return nil
}

// Shutdown stops the HTTP source (letting requests in flight finish), then
// the file source (a batch being delivered is not checkpointed unless
// delivery succeeded); each closes its storage client. It is safe without
// Start, and after a failed one.
func (r *sessionReceiver) Shutdown(ctx context.Context) error {
	var errs []error
	if r.http != nil {
		errs = append(errs, r.http.Shutdown(ctx))
	}
	if r.files != nil {
		errs = append(errs, r.files.Shutdown(ctx))
	}
	errs = append(errs, r.tel.Shutdown())
	return errors.Join(errs...)
}

// newObsReport is the obsreport of one transport. The file source is a
// long-lived operation (its polls are not requests).
func newObsReport(set receiver.Settings, transport string) (*receiverhelper.ObsReport, error) {
	return receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              transport,
		LongLivedCtx:           transport == metadata.TransportFile,
		ReceiverCreateSettings: set,
	})
}
