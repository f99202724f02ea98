package turnstate

import (
	"context"
	"errors"
	"sort"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// Self-telemetry instrument names. They are spelled out with the otelcol_
// prefix, as mdatagen-generated names are (docs/design.md §9.4, §9.5).
const (
	metricTurnsOpen        = "otelcol_connector_turn_state_turns_open"
	metricSessionsOpen     = "otelcol_connector_turn_state_sessions_open"
	metricTurnsClosed      = "otelcol_connector_turn_state_turns_closed"
	metricTurnsDangling    = "otelcol_connector_turn_state_turns_dangling"
	metricLateEvents       = "otelcol_connector_turn_state_late_events"
	metricEventsDropped    = "otelcol_connector_turn_state_events_dropped"
	metricGapsSkipped      = "otelcol_connector_turn_state_gaps_skipped"
	metricReorderOverflows = "otelcol_connector_turn_state_reorder_overflows"
	metricEmitFailures     = "otelcol_connector_turn_state_emit_failures"
	metricJournalFailures  = "otelcol_connector_turn_state_journal_write_failures"
)

// Values of events_dropped's reason attribute.
const (
	dropDuplicate  = "duplicate"   // a seq already applied or buffered
	dropInvalid    = "invalid"     // a session record whose row could not be decoded
	dropNotSession = "not_session" // a record that is no dsh session event
	dropOrphan     = "orphan"      // a turn/step/model/tool event outside any open turn or step
)

// telemetry is the connector's self-telemetry, recorded through the
// component's MeterProvider.
type telemetry struct {
	turnsClosed      metric.Int64Counter
	turnsDangling    metric.Int64Counter
	lateEvents       metric.Int64Counter
	eventsDropped    metric.Int64Counter
	gapsSkipped      metric.Int64Counter
	reorderOverflows metric.Int64Counter
	emitFailures     metric.Int64Counter
	journalFailures  metric.Int64Counter
	turnsOpen        metric.Int64ObservableGauge
	sessionsOpen     metric.Int64ObservableGauge
	reg              metric.Registration

	// The gauges' values, kept current by the core so the callback never
	// takes the core's lock.
	open, sessions atomic.Int64

	dropped map[string]metric.AddOption
	signal  map[string]metric.AddOption
}

func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	m := set.MeterProvider.Meter(metadata.ScopeName)
	t := &telemetry{dropped: map[string]metric.AddOption{}, signal: map[string]metric.AddOption{}}
	for _, r := range []string{dropDuplicate, dropInvalid, dropNotSession, dropOrphan} {
		t.dropped[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	for _, s := range []string{"traces", "metrics"} {
		t.signal[s] = metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", s)))
	}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	t.turnsClosed = counter(metricTurnsClosed, "{turn}", "Turns closed, by a turn/end or as dangling.")
	t.turnsDangling = counter(metricTurnsDangling, "{turn}",
		"Turns closed without their turn/end, by cause (timeout, evicted, shutdown, superseded).")
	t.lateEvents = counter(metricLateEvents, "{event}", "Events that arrived for a turn already closed; counted, not re-emitted.")
	t.eventsDropped = counter(metricEventsDropped, "{event}",
		"Records or events not mapped, by reason (duplicate, invalid, not_session, orphan).")
	t.gapsSkipped = counter(metricGapsSkipped, "{gap}", "Missing seqs given up on after gap_timeout or a reorder-window overflow.")
	t.reorderOverflows = counter(metricReorderOverflows, "{overflow}",
		"Times a session's reorder window filled up while a seq was missing, so the gap was skipped at once.")
	t.emitFailures = counter(metricEmitFailures, "{batch}",
		"Batches the next consumer refused, by signal (traces, metrics); counted, not retried.")
	t.journalFailures = counter(metricJournalFailures, "{write}",
		"Journal writes the storage extension failed; a failed batch is refused, so its sender retries it.")
	var err error
	t.turnsOpen, err = m.Int64ObservableGauge(metricTurnsOpen, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns open now."))
	errs = append(errs, err)
	t.sessionsOpen, err = m.Int64ObservableGauge(metricSessionsOpen, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions remembered now (bounded by max_sessions)."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(t.turnsOpen, t.open.Load())
		o.ObserveInt64(t.sessionsOpen, t.sessions.Load())
		return nil
	}, t.turnsOpen, t.sessionsOpen)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// update records what the engine did between two Stats snapshots and the
// current sizes for the gauges.
func (t *telemetry) update(ctx context.Context, prev, cur turnengine.Stats, openTurns, sessions int) {
	t.open.Store(int64(openTurns))
	t.sessions.Store(int64(sessions))
	addDelta(ctx, t.turnsClosed, cur.TurnsClosed-prev.TurnsClosed)
	addDelta(ctx, t.lateEvents, cur.Late-prev.Late)
	addDelta(ctx, t.gapsSkipped, cur.GapsSkipped-prev.GapsSkipped)
	addDelta(ctx, t.reorderOverflows, cur.Overflows-prev.Overflows)
	addDelta(ctx, t.eventsDropped, cur.Duplicates-prev.Duplicates, t.dropped[dropDuplicate])
	addDelta(ctx, t.eventsDropped, cur.Orphans-prev.Orphans, t.dropped[dropOrphan])
	causes := make([]string, 0, len(cur.Dangling))
	for cause := range cur.Dangling {
		causes = append(causes, cause)
	}
	sort.Strings(causes)
	for _, cause := range causes {
		addDelta(ctx, t.turnsDangling, cur.Dangling[cause]-prev.Dangling[cause],
			metric.WithAttributeSet(attribute.NewSet(attribute.String("cause", cause))))
	}
}

func addDelta(ctx context.Context, c metric.Int64Counter, n int64, opts ...metric.AddOption) {
	if n > 0 {
		c.Add(ctx, n, opts...)
	}
}

// drop counts n records or events not mapped for reason.
func (t *telemetry) drop(ctx context.Context, reason string, n int64) {
	addDelta(ctx, t.eventsDropped, n, t.dropped[reason])
}

// emitFailed counts a batch of signal the next consumer refused.
func (t *telemetry) emitFailed(ctx context.Context, signal string) {
	t.emitFailures.Add(ctx, 1, t.signal[signal])
}

// journalFailed counts a failed journal write.
func (t *telemetry) journalFailed(ctx context.Context) {
	t.journalFailures.Add(ctx, 1)
}

// shutdown stops the gauges' callback.
func (t *telemetry) shutdown() error {
	return t.reg.Unregister()
}
