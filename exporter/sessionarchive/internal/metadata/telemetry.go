package metadata

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Metric names, spelled verbatim with the otelcol_ prefix (docs/design.md §9.5).
const (
	MetricRowsWritten       = "otelcol_exporter_session_archive_rows_written"
	MetricBytesWritten      = "otelcol_exporter_session_archive_bytes_written"
	MetricFilesCreated      = "otelcol_exporter_session_archive_files_created"
	MetricDuplicatesSkipped = "otelcol_exporter_session_archive_duplicates_skipped"
	MetricGiveUps           = "otelcol_exporter_session_archive_give_ups"
	MetricSeqsSkipped       = "otelcol_exporter_session_archive_seqs_skipped"
	MetricRecordsDropped    = "otelcol_exporter_session_archive_records_dropped"
	MetricSessionsOpen      = "otelcol_exporter_session_archive_sessions_open"
	MetricRowsPending       = "otelcol_exporter_session_archive_rows_pending"
)

// Telemetry holds the exporter's own instruments, beside the obsreport
// metrics (otelcol_exporter_sent_log_records, …) exporterhelper records.
type Telemetry struct {
	// RowsWritten counts rows appended to session files, headers included
	// (a packed chunk row once).
	RowsWritten metric.Int64Counter
	// BytesWritten counts bytes appended to session files (compressed
	// bytes under zstd).
	BytesWritten metric.Int64Counter
	// FilesCreated counts session files created.
	FilesCreated metric.Int64Counter
	// DuplicatesSkipped counts rows not written because the archive
	// already had (or held) them.
	DuplicatesSkipped metric.Int64Counter
	// GiveUps counts give-ups on missing rows or headers (cause).
	GiveUps metric.Int64Counter
	// SeqsSkipped counts the seqs a give-up left out of the archive (cause).
	SeqsSkipped metric.Int64Counter
	// RecordsDropped counts records that cannot be archived (reason).
	RecordsDropped metric.Int64Counter

	sessionsOpen    metric.Int64ObservableGauge
	rowsPending     metric.Int64ObservableGauge
	registration    metric.Registration
	hasRegistration bool
}

// Gauges are the callbacks behind the asynchronous gauges.
type Gauges struct {
	// SessionsOpen is the number of sessions held in memory.
	SessionsOpen func() int64
	// RowsPending is the number of rows held for an earlier seq or a header.
	RowsPending func() int64
}

// NewTelemetry creates the instruments from the component's MeterProvider.
func NewTelemetry(set component.TelemetrySettings, g Gauges) (*Telemetry, error) {
	m := set.MeterProvider.Meter(ScopeName)
	t := &Telemetry{}
	var errs, err error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = errors.Join(errs, err)
		return c
	}
	t.RowsWritten = counter(MetricRowsWritten, "{row}",
		"Rows appended to archived session files, headers included (a packed chunk row counts once).")
	t.BytesWritten = counter(MetricBytesWritten, "By",
		"Bytes appended to archived session files (compressed bytes under zstd).")
	t.FilesCreated = counter(MetricFilesCreated, "{file}", "Archived session files created.")
	t.DuplicatesSkipped = counter(MetricDuplicatesSkipped, "{row}",
		"Rows not written because the archive already had them, or held them already (re-deliveries, restarts).")
	t.GiveUps = counter(MetricGiveUps, "{give_up}",
		"Times a session stopped waiting for a missing seq or its header (cause: timeout, overflow, evicted, shutdown) and wrote what it held.")
	t.SeqsSkipped = counter(MetricSeqsSkipped, "{event}",
		"Seqs a give-up left out of the archive for good; rows with them that arrive later are skipped.")
	t.RecordsDropped = counter(MetricRecordsDropped, "{record}",
		"Records that cannot be archived, by reason (not_session, invalid, unsupported, path, header_late).")
	t.sessionsOpen, err = m.Int64ObservableGauge(MetricSessionsOpen, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions held in memory (bounded by max_sessions)."))
	errs = errors.Join(errs, err)
	t.rowsPending, err = m.Int64ObservableGauge(MetricRowsPending, metric.WithUnit("{row}"),
		metric.WithDescription("Rows held until an earlier seq or the session header arrives."))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	t.registration, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if g.SessionsOpen != nil {
			o.ObserveInt64(t.sessionsOpen, g.SessionsOpen())
		}
		if g.RowsPending != nil {
			o.ObserveInt64(t.rowsPending, g.RowsPending())
		}
		return nil
	}, t.sessionsOpen, t.rowsPending)
	if err != nil {
		return nil, err
	}
	t.hasRegistration = true
	return t, nil
}

// Shutdown unregisters the gauge callbacks.
func (t *Telemetry) Shutdown() error {
	if t == nil || !t.hasRegistration {
		return nil
	}
	t.hasRegistration = false
	return t.registration.Unregister()
}
