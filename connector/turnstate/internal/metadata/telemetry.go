package metadata

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names, spelled verbatim with the otelcol_ prefix, as
// mdatagen-generated names are (docs/design.md §9.5).
const (
	MetricTurnsOpen        = "otelcol_connector_turn_state_turns_open"
	MetricSessionsOpen     = "otelcol_connector_turn_state_sessions_open"
	MetricTurnsClosed      = "otelcol_connector_turn_state_turns_closed"
	MetricTurnsDangling    = "otelcol_connector_turn_state_turns_dangling"
	MetricLateEvents       = "otelcol_connector_turn_state_late_events"
	MetricTurnsClosedLate  = "otelcol_connector_turn_state_turns_closed_late"
	MetricEventsDropped    = "otelcol_connector_turn_state_events_dropped"
	MetricGapsSkipped      = "otelcol_connector_turn_state_gaps_skipped"
	MetricReorderOverflows = "otelcol_connector_turn_state_reorder_overflows"
	MetricEmitFailures     = "otelcol_connector_turn_state_emit_failures"
	MetricJournalFailures  = "otelcol_connector_turn_state_journal_write_failures"
	MetricJournalLag       = "otelcol_connector_turn_state_journal_lag"
	MetricTurnsHeld        = "otelcol_connector_turn_state_turns_held"
	MetricTurnsLost        = "otelcol_connector_turn_state_turns_lost"
	MetricJournalDamaged   = "otelcol_connector_turn_state_journal_damaged"
	MetricJournalRestored  = "otelcol_connector_turn_state_journal_restored_events"
	MetricRedelivered      = "otelcol_connector_turn_state_events_redelivered"
	MetricSessionsRestored = "otelcol_connector_turn_state_sessions_restored"
	MetricRestoreDuration  = "otelcol_connector_turn_state_restore_duration"
	MetricRestoreFailures  = "otelcol_connector_turn_state_restore_failures"
	MetricTurnsHandedOver  = "otelcol_connector_turn_state_turns_handed_over"
	MetricViewSyncs        = "otelcol_connector_turn_state_changelog_reads"
	MetricChangelogRecords = "otelcol_connector_turn_state_changelog_records_written"
	MetricChangelogBytes   = "otelcol_connector_turn_state_changelog_bytes_written"
	MetricChangelogLost    = "otelcol_connector_turn_state_changelog_lost"
	MetricViewSessions     = "otelcol_connector_turn_state_changelog_view_sessions"
	MetricViewBytes        = "otelcol_connector_turn_state_changelog_view_bytes"
	MetricViewPartitions   = "otelcol_connector_turn_state_changelog_partitions_read"
	MetricTurnsSampled     = "otelcol_connector_turn_state_turns_sampled"
	MetricHeldDropped      = "otelcol_connector_turn_state_sampling_steps_dropped"
	MetricHeldSpans        = "otelcol_connector_turn_state_sampling_held_spans"
)

// Values of events_dropped's reason attribute.
const (
	ReasonDuplicate  = "duplicate"   // a seq already applied or buffered
	ReasonInvalid    = "invalid"     // a session record whose row could not be decoded
	ReasonNotSession = "not_session" // a record that is no dsh session event
	ReasonOrphan     = "orphan"      // a turn/step/model/tool event outside any open turn or step
)

// Values of emit_failures' signal attribute.
const (
	SignalTraces  = "traces"
	SignalMetrics = "metrics"
)

// Telemetry holds the connector's own instruments, recorded through the
// component's MeterProvider.
type Telemetry struct {
	// TurnsClosed counts turns closed, by a turn/end or as dangling.
	TurnsClosed metric.Int64Counter
	// LateEvents counts events that arrived for a turn already closed.
	LateEvents metric.Int64Counter
	// TurnsClosedLate counts turn/ends of turns already closed as dangling.
	TurnsClosedLate metric.Int64Counter
	// GapsSkipped counts missing seqs given up on.
	GapsSkipped metric.Int64Counter
	// ReorderOverflows counts reorder windows that filled up.
	ReorderOverflows metric.Int64Counter
	// JournalFailures counts journal writes the storage extension failed.
	JournalFailures metric.Int64Counter
	// TurnsLost counts closed turns the traces consumer refused that a stop
	// without a journal lost.
	TurnsLost metric.Int64Counter
	// JournalDamaged counts journal values that could not be read at start.
	JournalDamaged metric.Int64Counter
	// JournalRestored counts events re-applied from the journal at start.
	JournalRestored metric.Int64Counter
	// Redelivered counts events delivered again after a restart whose seq
	// the journal already held (dropped as duplicates).
	Redelivered metric.Int64Counter
	// ViewSyncs counts the batches that read the changelog up to its end
	// before they were applied.
	ViewSyncs metric.Int64Counter
	// ChangelogRecords and ChangelogBytes count what the changelog writes
	// that landed carried.
	ChangelogRecords, ChangelogBytes metric.Int64Counter
	// ChangelogLost counts the times the changelog topic was found deleted
	// or created again.
	ChangelogLost metric.Int64Counter
	// SessionsRestored counts sessions resumed from the changelog when a
	// batch first brought them to this instance (a partition assigned).
	SessionsRestored metric.Int64Counter
	// RestoreDuration records, per batch that restored sessions, the time
	// spent bringing the view up to date and replaying them.
	RestoreDuration metric.Float64Histogram
	// RestoreFailures counts batches refused because the changelog could
	// not be read (the sender retries them).
	RestoreFailures metric.Int64Counter
	// TurnsHandedOver counts open turns this instance let go of because
	// another instance took their session over.
	TurnsHandedOver metric.Int64Counter

	// The counters with an attribute are recorded through AddDangling,
	// AddDropped and AddEmitFailure, which reuse one attribute set per value.
	turnsDangling metric.Int64Counter
	eventsDropped metric.Int64Counter
	emitFailures  metric.Int64Counter
	turnsSampled  metric.Int64Counter
	heldDropped   metric.Int64Counter
	byReason      map[string]metric.AddOption
	bySignal      map[string]metric.AddOption
	bySampling    map[[2]string]metric.AddOption

	turnsOpen       metric.Int64ObservableGauge
	sessionsOpen    metric.Int64ObservableGauge
	journalLag      metric.Int64ObservableGauge
	turnsHeld       metric.Int64ObservableGauge
	viewSessions    metric.Int64ObservableGauge
	viewBytes       metric.Int64ObservableGauge
	viewPartitions  metric.Int64ObservableGauge
	heldSpans       metric.Int64ObservableGauge
	registration    metric.Registration
	hasRegistration bool
}

// Gauges are the callbacks behind the asynchronous gauges. They are called
// on the telemetry's collection goroutine, so they must not wait for the
// component's locks.
type Gauges struct {
	// TurnsOpen is the number of turns open now.
	TurnsOpen func() int64
	// SessionsOpen is the number of sessions remembered now.
	SessionsOpen func() int64
	// JournalLag is the number of sessions whose journaled state is behind
	// the engine's (their last journal write failed).
	JournalLag func() int64
	// TurnsHeld is the number of closed turns the traces consumer refused,
	// held until it accepts them.
	TurnsHeld func() int64
	// View is, with a changelog, what its view holds: sessions, bytes of
	// values and partitions read (ok false: no changelog, no values).
	View func() (sessions, bytes, partitions int64, ok bool)
	// HeldSpans is the number of spans of live steps held back for the
	// open turns of sessions the sampling does not keep.
	HeldSpans func() int64
}

// NewTelemetry creates the instruments from the component's MeterProvider.
func NewTelemetry(set component.TelemetrySettings, g Gauges) (*Telemetry, error) {
	m := set.MeterProvider.Meter(ScopeName)
	t := &Telemetry{byReason: map[string]metric.AddOption{}, bySignal: map[string]metric.AddOption{},
		bySampling: map[[2]string]metric.AddOption{}}
	for _, r := range []string{ReasonDuplicate, ReasonInvalid, ReasonNotSession, ReasonOrphan} {
		t.byReason[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	for _, s := range []string{SignalTraces, SignalMetrics} {
		t.bySignal[s] = metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", s)))
	}
	var errs, err error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = errors.Join(errs, err)
		return c
	}
	t.TurnsClosed = counter(MetricTurnsClosed, "{turn}", "Turns closed, by a turn/end or as dangling.")
	t.turnsDangling = counter(MetricTurnsDangling, "{turn}",
		"Turns closed without their turn/end, by cause (timeout, evicted, shutdown, superseded).")
	t.LateEvents = counter(MetricLateEvents, "{event}", "Events that arrived for a turn already closed; counted, not re-emitted.")
	t.TurnsClosedLate = counter(MetricTurnsClosedLate, "{turn}",
		"Turns closed as dangling whose turn/end came later; each emits one late-close span in the turn's trace.")
	t.eventsDropped = counter(MetricEventsDropped, "{event}",
		"Records or events not mapped, by reason (duplicate, invalid, not_session, orphan).")
	t.GapsSkipped = counter(MetricGapsSkipped, "{gap}", "Missing seqs given up on after gap_timeout or a reorder-window overflow.")
	t.ReorderOverflows = counter(MetricReorderOverflows, "{overflow}",
		"Times a session's reorder window filled up while a seq was missing, so the gap was skipped at once.")
	t.emitFailures = counter(MetricEmitFailures, "{batch}",
		"Batches the next consumer refused, by signal: traces are held and offered again (turns_held), metrics go out with the next flush.")
	t.JournalFailures = counter(MetricJournalFailures, "{write}",
		"Journal writes the storage extension failed; a failed batch is refused, so its sender retries it.")
	t.TurnsLost = counter(MetricTurnsLost, "{turn}",
		"Closed turns the traces consumer still refused when the connector stopped without a journal: lost.")
	t.JournalDamaged = counter(MetricJournalDamaged, "{value}",
		"Journal values unreadable at start: their sessions started afresh, the turns they had open lost.")
	t.JournalRestored = counter(MetricJournalRestored, "{event}",
		"Events re-applied from the journal at start: the open turns' records, rebuilt.")
	t.Redelivered = counter(MetricRedelivered, "{event}",
		"Events delivered again after a restart whose seq the journal already held; dropped (also counted as duplicate).")
	t.SessionsRestored = counter(MetricSessionsRestored, "{session}",
		"Sessions resumed from the changelog when a batch first brought them here (their partition was assigned to this instance).")
	t.ViewSyncs = counter(MetricViewSyncs, "{batch}",
		"Batches that read the changelog up to its end before they were applied: the first of a partition after it was assigned here, or after a gap in its offsets.")
	t.ChangelogRecords = counter(MetricChangelogRecords, "{record}",
		"Records the changelog writes carried that the brokers acknowledged: one per journal key set, a tombstone per key deleted.")
	t.ChangelogBytes = counter(MetricChangelogBytes, "By",
		"Bytes of the changelog records the brokers acknowledged: keys, values and the writer header, before compression.")
	t.ChangelogLost = counter(MetricChangelogLost, "{event}",
		"Times the changelog topic was found deleted or created again: what it held is gone until the instances write their sessions again.")
	t.RestoreFailures = counter(MetricRestoreFailures, "{batch}",
		"Batches refused because the changelog could not be read to restore or check their sessions; the sender retries them.")
	t.TurnsHandedOver = counter(MetricTurnsHandedOver, "{turn}",
		"Open turns let go of, without a span, because another instance took their session over (it carries them on).")
	t.turnsSampled = counter(MetricTurnsSampled, "{turn}",
		"Closed turns the sampling kept (sampled true) or dropped (false), by reason: outcome, finding, keep_over, session, or ratio for a dropped one.")
	t.heldDropped = counter(MetricHeldDropped, "{step}",
		"Live steps of unsampled sessions' open turns let go of at sampling::max_held_spans; a turn kept later goes out without them.")
	t.RestoreDuration, err = m.Float64Histogram(MetricRestoreDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a batch spent restoring the sessions it brought: the changelog read up to its end, and their replay."),
		metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	errs = errors.Join(errs, err)
	t.journalLag, err = m.Int64ObservableGauge(MetricJournalLag, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions whose journaled state is behind the turn state: their last journal write failed."))
	errs = errors.Join(errs, err)
	t.turnsOpen, err = m.Int64ObservableGauge(MetricTurnsOpen, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns open now."))
	errs = errors.Join(errs, err)
	t.sessionsOpen, err = m.Int64ObservableGauge(MetricSessionsOpen, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions remembered now (bounded by max_sessions)."))
	errs = errors.Join(errs, err)
	t.turnsHeld, err = m.Int64ObservableGauge(MetricTurnsHeld, metric.WithUnit("{turn}"),
		metric.WithDescription("Closed turns the traces consumer refused, held and offered again; while any is held, batches are refused so their senders back off."))
	errs = errors.Join(errs, err)
	t.viewSessions, err = m.Int64ObservableGauge(MetricViewSessions, metric.WithUnit("{session}"),
		metric.WithDescription("Sessions the changelog view holds: those of the session-topic partitions this instance consumes."))
	errs = errors.Join(errs, err)
	t.viewBytes, err = m.Int64ObservableGauge(MetricViewBytes, metric.WithUnit("By"),
		metric.WithDescription("Bytes of the values the changelog view holds (journal entries and open turns' records), before the view's own overhead."))
	errs = errors.Join(errs, err)
	t.viewPartitions, err = m.Int64ObservableGauge(MetricViewPartitions, metric.WithUnit("{partition}"),
		metric.WithDescription("Changelog partitions this instance reads: those of the session-topic partitions it consumes."))
	errs = errors.Join(errs, err)
	t.heldSpans, err = m.Int64ObservableGauge(MetricHeldSpans, metric.WithUnit("{span}"),
		metric.WithDescription("Spans of live steps held back for the open turns of sessions the sampling does not keep, until each turn's end decides (bounded by sampling::max_held_spans)."))
	errs = errors.Join(errs, err)
	if errs != nil {
		return nil, errs
	}
	t.registration, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if g.TurnsOpen != nil {
			o.ObserveInt64(t.turnsOpen, g.TurnsOpen())
		}
		if g.SessionsOpen != nil {
			o.ObserveInt64(t.sessionsOpen, g.SessionsOpen())
		}
		if g.JournalLag != nil {
			o.ObserveInt64(t.journalLag, g.JournalLag())
		}
		if g.TurnsHeld != nil {
			o.ObserveInt64(t.turnsHeld, g.TurnsHeld())
		}
		if g.HeldSpans != nil {
			o.ObserveInt64(t.heldSpans, g.HeldSpans())
		}
		if g.View != nil {
			if sessions, bytes, parts, ok := g.View(); ok {
				o.ObserveInt64(t.viewSessions, sessions)
				o.ObserveInt64(t.viewBytes, bytes)
				o.ObserveInt64(t.viewPartitions, parts)
			}
		}
		return nil
	}, t.turnsOpen, t.sessionsOpen, t.journalLag, t.turnsHeld, t.viewSessions, t.viewBytes, t.viewPartitions, t.heldSpans)
	if err != nil {
		return nil, err
	}
	t.hasRegistration = true
	return t, nil
}

// AddDangling counts n turns closed as dangling for cause.
func (t *Telemetry) AddDangling(ctx context.Context, cause string, n int64) {
	if n > 0 {
		t.turnsDangling.Add(ctx, n, metric.WithAttributeSet(attribute.NewSet(attribute.String("cause", cause))))
	}
}

// AddDropped counts n records or events not mapped for reason, one of the
// Reason values.
func (t *Telemetry) AddDropped(ctx context.Context, reason string, n int64) {
	if n <= 0 {
		return
	}
	opt, ok := t.byReason[reason]
	if !ok {
		opt = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason)))
	}
	t.eventsDropped.Add(ctx, n, opt)
}

// AddEmitFailure counts one batch of signal (SignalTraces, SignalMetrics)
// the next consumer refused.
func (t *Telemetry) AddEmitFailure(ctx context.Context, signal string) {
	opt, ok := t.bySignal[signal]
	if !ok {
		opt = metric.WithAttributeSet(attribute.NewSet(attribute.String("signal", signal)))
	}
	t.emitFailures.Add(ctx, 1, opt)
}

// AddSampled counts one closed turn the sampling kept or dropped, for
// reason (internal/sampling's Reasons).
func (t *Telemetry) AddSampled(ctx context.Context, kept bool, reason string) {
	key := [2]string{strconv.FormatBool(kept), reason}
	opt, ok := t.bySampling[key]
	if !ok {
		opt = metric.WithAttributeSet(attribute.NewSet(attribute.Bool("sampled", kept), attribute.String("reason", reason)))
		t.bySampling[key] = opt
	}
	t.turnsSampled.Add(ctx, 1, opt)
}

// ZeroSampled makes the sampling counters' series exist at zero: kept
// for each reason, dropped for ratio.
func (t *Telemetry) ZeroSampled(ctx context.Context, reasons []string, dropped string) {
	for _, r := range reasons {
		kept := r != dropped
		opt := metric.WithAttributeSet(attribute.NewSet(attribute.Bool("sampled", kept), attribute.String("reason", r)))
		t.bySampling[[2]string{strconv.FormatBool(kept), r}] = opt
		t.turnsSampled.Add(ctx, 0, opt)
	}
	t.heldDropped.Add(ctx, 0)
}

// AddHeldDropped counts n live steps let go of at the held bound.
func (t *Telemetry) AddHeldDropped(ctx context.Context, n int64) {
	if n > 0 {
		t.heldDropped.Add(ctx, n)
	}
}

// Shutdown unregisters the gauge callbacks.
func (t *Telemetry) Shutdown() error {
	if t == nil || !t.hasRegistration {
		return nil
	}
	t.hasRegistration = false
	return t.registration.Unregister()
}
