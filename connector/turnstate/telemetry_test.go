package turnstate

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// oneRecord returns a batch of one record made by fill.
func oneRecord(fill func(res plog.ResourceLogs, lr plog.LogRecord)) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	fill(rl, rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	return ld
}

// Self-telemetry through the component's MeterProvider: open turns and
// sessions, closed and dangling turns, and every reason a record or event
// is not mapped.
func TestSelfTelemetry(t *testing.T) {
	ld, _ := buildRecords(t, corpusPath(t, "v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl"), "")
	head, _ := splitAt(ld, lastTurnEnd(t, ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()))
	headEvents := head.LogRecordCount() - 1 // less the header record

	h := newHarness(t, createDefaultConfig(), nil, nil)
	h.start()
	h.feed(head)
	closed := len(turnSpans(h.allTraces()))
	require.Positive(t, closed)
	assert.EqualValues(t, 1, h.selfGauge(metadata.MetricTurnsOpen))
	assert.EqualValues(t, 1, h.selfGauge(metadata.MetricSessionsOpen))
	assert.EqualValues(t, closed, h.selfSum(metadata.MetricTurnsClosed))

	// The same batch again: every event a duplicate.
	h.feed(head)
	assert.EqualValues(t, headEvents, h.selfSum(metadata.MetricEventsDropped, "reason=duplicate"))

	// A log record of some other producer.
	h.feed(oneRecord(func(_ plog.ResourceLogs, lr plog.LogRecord) { lr.Body().SetStr("GET /index.html 200") }))
	assert.EqualValues(t, 1, h.selfSum(metadata.MetricEventsDropped, "reason=not_session"))

	// A session record whose row does not decode, and a header of a format
	// version from the future.
	h.feed(oneRecord(func(_ plog.ResourceLogs, lr plog.LogRecord) {
		lr.SetEventName(logrecord.EventNameEvent)
		lr.Attributes().PutStr(logrecord.AttrSessionID, "broken")
		lr.Body().SetStr(`{"type":"turn/start",`)
	}))
	h.feed(oneRecord(func(_ plog.ResourceLogs, lr plog.LogRecord) {
		lr.SetEventName(logrecord.EventNameHeader)
		lr.Attributes().PutStr(logrecord.AttrSessionID, "future")
		lr.Body().SetStr(`{"type":"session","version":99,"id":"future","createdAt":0,"cwd":"/"}`)
	}))
	assert.EqualValues(t, 2, h.selfSum(metadata.MetricEventsDropped, "reason=invalid"))
	assert.EqualValues(t, 1, h.core().engine.Stats().Violations, "the undecodable row is a violation")

	// dsh v0's export of a tool call in no open turn: an orphan.
	h.feed(oneRecord(func(_ plog.ResourceLogs, lr plog.LogRecord) {
		lr.Attributes().PutStr(logrecord.AttrSessionID, "orphan")
		lr.Attributes().PutStr(logrecord.AttrEventType, "tool/call")
		lr.Attributes().PutInt(logrecord.AttrEventSeq, 7)
		require.NoError(t, lr.Body().SetEmptyMap().FromRaw(map[string]any{
			"turn": 3, "step": 1, "callId": "c1", "toolName": "read", "arguments": "{}"}))
	}))
	assert.EqualValues(t, 1, h.selfSum(metadata.MetricEventsDropped, "reason=orphan"))
	assert.EqualValues(t, 2, h.selfGauge(metadata.MetricSessionsOpen), "the file's session and the orphan's; the undecodable records reach no session")

	h.shutdown()
	assert.EqualValues(t, 1, h.selfSum(metadata.MetricTurnsDangling, "cause=shutdown"))
	assert.EqualValues(t, closed+1, h.selfSum(metadata.MetricTurnsClosed))
	assert.Zero(t, h.selfSum(metadata.MetricEmitFailures, "signal=traces"))
	_, err := h.tel.GetMetric(metadata.MetricTurnsOpen)
	assert.Error(t, err, "the gauges' callback is unregistered at shutdown")
}

// withoutRecord returns the single-session batch without record i.
func withoutRecord(ld plog.Logs, i int) (rest, missing plog.Logs) {
	rest, missing = plog.NewLogs(), plog.NewLogs()
	ld.ResourceLogs().At(0).CopyTo(rest.ResourceLogs().AppendEmpty())
	ld.ResourceLogs().At(0).CopyTo(missing.ResourceLogs().AppendEmpty())
	n := 0
	rest.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().RemoveIf(func(plog.LogRecord) bool { n++; return n-1 == i })
	n = 0
	missing.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().RemoveIf(func(plog.LogRecord) bool { n++; return n-1 != i })
	return rest, missing
}

// A missing seq is awaited for gap_timeout, then skipped at a sweep; a
// reorder window that fills up skips it at once.
func TestGapTelemetry(t *testing.T) {
	ld, _ := buildRecords(t, corpusPath(t, "v4/snapshots/sdk/tool-error-details/session.v4.jsonl"), "")
	// Record 0 is the header, 1 is seq 0, 2 is seq 1.
	seq, _ := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(2).Attributes().Get(logrecord.AttrEventSeq)
	require.EqualValues(t, 1, seq.Int())
	rest, missing := withoutRecord(ld, 2)

	t.Run("timeout", func(t *testing.T) {
		cfg := createDefaultConfig()
		cfg.GapTimeout = time.Second
		h := newHarness(t, cfg, nil, nil)
		h.feed(rest)
		assert.Zero(t, h.traces.SpanCount(), "waiting for seq 1")
		h.clock.Advance(500 * time.Millisecond)
		h.core().sweep(context.Background())
		assert.Zero(t, h.selfSum(metadata.MetricGapsSkipped))
		h.clock.Advance(600 * time.Millisecond)
		h.core().sweep(context.Background())
		assert.EqualValues(t, 1, h.selfSum(metadata.MetricGapsSkipped))
		assert.Zero(t, h.selfSum(metadata.MetricReorderOverflows))
		assert.Positive(t, h.traces.SpanCount(), "the turns closed once the gap was skipped")
		h.feed(missing)
		assert.EqualValues(t, 1, h.selfSum(metadata.MetricEventsDropped, "reason=duplicate"), "a seq given up on is not applied later")
		h.shutdown()
	})
	t.Run("overflow", func(t *testing.T) {
		cfg := createDefaultConfig()
		cfg.ReorderWindow = 2
		h := newHarness(t, cfg, nil, nil)
		h.feed(rest)
		assert.EqualValues(t, 1, h.selfSum(metadata.MetricReorderOverflows))
		assert.EqualValues(t, 1, h.selfSum(metadata.MetricGapsSkipped))
		h.shutdown()
		stats := h.core().engine.Stats()
		assert.EqualValues(t, stats.Events, ld.LogRecordCount()-2, "every event but the missing one applied")
		assert.Positive(t, stats.Dangling[turnengine.CauseShutdown]+stats.TurnsClosed)
	})
}
