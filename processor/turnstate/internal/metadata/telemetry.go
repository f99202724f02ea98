package metadata

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Metric names, spelled out with the otelcol_ prefix as mdatagen-generated
// names are.
const (
	MetricRecordsStamped   = "otelcol_processor_turn_state_records_stamped"
	MetricRecordsPassed    = "otelcol_processor_turn_state_records_passed"
	MetricRecordsUnplaced  = "otelcol_processor_turn_state_records_unplaced"
	MetricRecordsDuplicate = "otelcol_processor_turn_state_records_duplicate"
	MetricRecordsInvalid   = "otelcol_processor_turn_state_records_invalid"
	MetricSessionsTracked  = "otelcol_processor_turn_state_sessions_tracked"
	MetricSessionsEvicted  = "otelcol_processor_turn_state_sessions_evicted"
)

// Telemetry holds the processor's own instruments, beside the ones
// processorhelper records (otelcol_processor_incoming_items, …).
type Telemetry struct {
	// RecordsStamped counts session-event records given the trace and
	// span ids of their span.
	RecordsStamped metric.Int64Counter
	// RecordsPassed counts records that are no dsh session event, passed
	// on untouched.
	RecordsPassed metric.Int64Counter
	// RecordsUnplaced counts session records that belong to no span (a
	// header, an event between turns, a late or stray event), passed on
	// unstamped.
	RecordsUnplaced metric.Int64Counter
	// RecordsDuplicate counts session-event records whose seqs are not
	// after the last one applied for their session, passed on unstamped.
	RecordsDuplicate metric.Int64Counter
	// RecordsInvalid counts session records that could not be decoded,
	// passed on unstamped.
	RecordsInvalid metric.Int64Counter
	// SessionsEvicted counts sessions forgotten at max_sessions.
	SessionsEvicted metric.Int64Counter

	sessionsTracked metric.Int64ObservableGauge
	registration    metric.Registration
	hasRegistration bool
}

// NewTelemetry creates the instruments from the component's MeterProvider;
// sessions reports the number of sessions tracked for the gauge.
func NewTelemetry(set component.TelemetrySettings, sessions func() int64) (*Telemetry, error) {
	m := set.MeterProvider.Meter(ScopeName)
	t := &Telemetry{}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit("{record}"), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	t.RecordsStamped = counter(MetricRecordsStamped,
		"Session-event log records stamped with the trace and span ids of their span.")
	t.RecordsPassed = counter(MetricRecordsPassed,
		"Log records that are no dsh session event (other applications), passed on untouched.")
	t.RecordsUnplaced = counter(MetricRecordsUnplaced,
		"Session log records that belong to no span (headers, events between turns, late or stray events), passed on unstamped.")
	t.RecordsDuplicate = counter(MetricRecordsDuplicate,
		"Session-event log records whose seq is not after the last one applied for the session (redelivered, or arrived after a later event), passed on unstamped.")
	t.RecordsInvalid = counter(MetricRecordsInvalid,
		"Session log records that could not be decoded, passed on unstamped.")
	var err error
	t.SessionsEvicted, err = m.Int64Counter(MetricSessionsEvicted, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions forgotten at max_sessions, least recently active first."))
	errs = append(errs, err)
	t.sessionsTracked, err = m.Int64ObservableGauge(MetricSessionsTracked, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions whose position the processor keeps now (bounded by max_sessions)."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.registration, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(t.sessionsTracked, sessions())
		return nil
	}, t.sessionsTracked)
	if err != nil {
		return nil, err
	}
	t.hasRegistration = true
	return t, nil
}

// Shutdown unregisters the gauge callback.
func (t *Telemetry) Shutdown() error {
	if t == nil || !t.hasRegistration {
		return nil
	}
	t.hasRegistration = false
	return t.registration.Unregister()
}
