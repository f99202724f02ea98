package metadata

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Telemetry holds the receiver's own instruments, beside the obsreport
// metrics (otelcol_receiver_accepted_log_records, …) receiverhelper records.
type Telemetry struct {
	// RowsAccepted counts rows turned into records and delivered (transport).
	RowsAccepted metric.Int64Counter
	// RowsDuplicate counts rows acknowledged as already delivered (transport).
	RowsDuplicate metric.Int64Counter
	// RowsRejected counts rows refused or skipped (transport, reason).
	RowsRejected metric.Int64Counter
	// BytesRead counts input bytes: decompressed request bodies, bytes read
	// from session files (transport).
	BytesRead metric.Int64Counter
	// StateWriteFailures counts failed writes of the receiver's own state
	// (transport).
	StateWriteFailures metric.Int64Counter

	meter           metric.Meter
	filesTracked    metric.Int64ObservableGauge
	dedupSessions   metric.Int64ObservableGauge
	registration    metric.Registration
	hasRegistration bool
}

// Gauges are the callbacks behind the asynchronous gauges.
type Gauges struct {
	// FilesTracked is the number of session files being tailed.
	FilesTracked func() int64
	// DedupSessions is the number of sessions whose accepted seqs the HTTP
	// source remembers.
	DedupSessions func() int64
}

// Metric names, spelled verbatim with the otelcol_ prefix (docs/design.md §9.5).
const (
	MetricRowsAccepted  = "otelcol_receiver_session_event_rows_accepted"
	MetricRowsDuplicate = "otelcol_receiver_session_event_rows_duplicate"
	MetricRowsRejected  = "otelcol_receiver_session_event_rows_rejected"
	MetricBytesRead     = "otelcol_receiver_session_event_bytes_read"
	MetricStateFailures = "otelcol_receiver_session_event_state_write_failures"
	MetricFilesTracked  = "otelcol_receiver_session_event_files_tracked"
	MetricDedupSessions = "otelcol_receiver_session_event_dedup_sessions"
)

// NewTelemetry creates the instruments from the component's MeterProvider.
// The gauges report nothing until ObserveGauges gives them their callbacks.
func NewTelemetry(set component.TelemetrySettings) (*Telemetry, error) {
	m := set.MeterProvider.Meter(ScopeName)
	t := &Telemetry{meter: m}
	var errs, err error
	t.RowsAccepted, err = m.Int64Counter(MetricRowsAccepted, metric.WithUnit("{row}"),
		metric.WithDescription("Session log rows turned into log records and accepted by the next consumer."))
	errs = errors.Join(errs, err)
	t.RowsDuplicate, err = m.Int64Counter(MetricRowsDuplicate, metric.WithUnit("{row}"),
		metric.WithDescription("Rows acknowledged as already accepted (same session, format version and seq) and not emitted again."))
	errs = errors.Join(errs, err)
	t.RowsRejected, err = m.Int64Counter(MetricRowsRejected, metric.WithUnit("{row}"),
		metric.WithDescription("Rows refused (HTTP: the rows of a rejected request, at least one per request) or skipped (files: corrupt rows), by reason."))
	errs = errors.Join(errs, err)
	t.BytesRead, err = m.Int64Counter(MetricBytesRead, metric.WithUnit("By"),
		metric.WithDescription("Input bytes read: decompressed HTTP request bodies, bytes read from session files."))
	errs = errors.Join(errs, err)
	t.StateWriteFailures, err = m.Int64Counter(MetricStateFailures, metric.WithUnit("{write}"),
		metric.WithDescription("Writes of the receiver's own state (file checkpoints, the HTTP deduplication state) the storage extension failed; while they fail, files are not read on and requests are answered 503."))
	errs = errors.Join(errs, err)
	t.filesTracked, err = m.Int64ObservableGauge(MetricFilesTracked, metric.WithUnit("{file}"),
		metric.WithDescription("Session files being tailed."))
	errs = errors.Join(errs, err)
	t.dedupSessions, err = m.Int64ObservableGauge(MetricDedupSessions, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions whose accepted seqs the HTTP source remembers for deduplication."))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	return t, nil
}

// ObserveGauges registers the gauges' callbacks: the transports they
// observe exist by then. Call it once.
func (t *Telemetry) ObserveGauges(g Gauges) error {
	reg, err := t.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if g.FilesTracked != nil {
			o.ObserveInt64(t.filesTracked, g.FilesTracked())
		}
		if g.DedupSessions != nil {
			o.ObserveInt64(t.dedupSessions, g.DedupSessions())
		}
		return nil
	}, t.filesTracked, t.dedupSessions)
	if err != nil {
		return err
	}
	t.registration, t.hasRegistration = reg, true
	return nil
}

// Shutdown unregisters the gauge callbacks.
func (t *Telemetry) Shutdown() error {
	if t == nil || !t.hasRegistration {
		return nil
	}
	t.hasRegistration = false
	return t.registration.Unregister()
}
