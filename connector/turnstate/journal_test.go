package turnstate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/journal"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

var journalStorageID = component.MustNewID("file_storage")

// realStorage starts a real file_storage extension (bbolt) on dir and
// returns a host offering it; it is shut down with the test.
func realStorage(t *testing.T, dir string) component.Host {
	t.Helper()
	ctx := context.Background()
	f := filestorage.NewFactory()
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = dir
	ext, err := f.Create(ctx, extension.Settings{ID: journalStorageID, TelemetrySettings: componenttest.NewNopTelemetrySettings(),
		BuildInfo: component.NewDefaultBuildInfo()}, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(ctx, componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return storagetest.NewStorageHost().WithExtension(journalStorageID, ext)
}

// journaled is a harness whose connector journals to file_storage in dir.
func journaled(t *testing.T, dir string) *harness {
	t.Helper()
	return journaledTo(t, dir, nil)
}

// journaledTo is journaled with the given traces consumer (nil: a sink).
func journaledTo(t *testing.T, dir string, traces consumer.Traces) *harness {
	t.Helper()
	cfg := createDefaultConfig()
	id := journalStorageID
	cfg.Storage = &id
	h := newHarness(t, cfg, traces, nil)
	host := realStorage(t, dir)
	require.NoError(t, h.toMt.Start(context.Background(), host))
	require.NoError(t, h.toTr.Start(context.Background(), host))
	return h
}

// crash stops a harness's connector the way a SIGKILL does: no shutdown,
// no flush, no last journal write — only what its batches wrote remains.
// The storage client is closed so that the next run can open the file.
func (h *harness) crash() {
	h.t.Helper()
	c := h.core()
	c.passMu.Lock()
	c.mu.Lock()
	c.phase.closed = true
	c.mu.Unlock()
	c.passMu.Unlock()
	close(c.life.stop)
	<-c.life.done
	require.NoError(h.t, c.journal.Close(context.Background()))
	registryMu.Lock()
	delete(registry, c.cfg)
	registryMu.Unlock()
}

// traces merges what a harness's traces sink received.
func mergeTraces(hs ...*harness) ptrace.Traces {
	out := ptrace.NewTraces()
	for _, h := range hs {
		h.allTraces().ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	return out
}

var journalFiles = []string{
	"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl",
	"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
	"v0/examples/acp-agent/tests/snapshots/subagent-mixed/session.2.jsonl",
	"v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl",
	"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl",
	"wire/v0/examples/headless-agent/tests/snapshots/provider-retry/stream-json.expected.jsonl",
}

// The collector is killed after any batch and restarted on the same
// file_storage; the source re-delivers the last two batches (its
// checkpoint lagged). Together the two runs emit exactly the turns, spans
// and ids one uninterrupted run emits — the turn open at the kill
// included, once, complete — and apply every event once.
func TestJournalCarriesTurnsAcrossCrash(t *testing.T) {
	for _, rel := range journalFiles {
		path := filepath.Join(testcorpus.Dir(t), rel)
		records, _ := buildRecords(t, path, "s-"+filepath.Base(filepath.Dir(rel)))
		bs := batches(records, 4)

		ref := newHarness(t, createDefaultConfig(), nil, nil)
		ref.start()
		for _, b := range bs {
			ref.feed(b)
		}
		want := ref.allTraces() // closed turns only: no shutdown flush yet
		refStats := ref.core().engine.Stats()
		refOpen := ref.core().engine.OpenTurns()
		ref.shutdown()

		for k := 1; k < len(bs); k++ {
			t.Run(fmt.Sprintf("%s/kill-after-%d-of-%d", filepath.Base(filepath.Dir(rel)), k, len(bs)), func(t *testing.T) {
				dir := t.TempDir()
				run1 := journaled(t, dir)
				for _, b := range bs[:k] {
					run1.feed(b)
				}
				run1.crash()

				run2 := journaled(t, dir)
				for _, b := range bs[max(0, k-2):] {
					run2.feed(b)
				}
				got := mergeTraces(run1, run2)
				require.NoError(t, ptracetest.CompareTraces(want, got, ptracetest.IgnoreResourceSpansOrder()))
				s1, s2 := run1.core().engine.Stats(), run2.core().engine.Stats()
				require.Equal(t, refStats.Events, s1.Events+s2.Events, "events applied")
				require.Equal(t, refStats.TurnsClosed, s1.TurnsClosed+s2.TurnsClosed, "turns closed")
				require.Equal(t, refOpen, run2.core().engine.OpenTurns(), "turns open at the end")

				// A clean stop with a journal keeps the open turns open
				// (no dangling span), and the next start has them again.
				n := run2.traces.SpanCount()
				run2.shutdown()
				require.Equal(t, n, run2.traces.SpanCount(), "spans emitted at a journaled shutdown")
				run3 := journaled(t, dir)
				require.Equal(t, refOpen, run3.core().engine.OpenTurns(), "turns open after a clean restart")
				run3.shutdown()
			})
		}
	}
}

// Without a storage extension a clean stop closes the open turns as
// dangling, cause shutdown (the behaviour the journal replaces).
func TestNoJournalFlushesAtShutdown(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t),
		"v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl"), "pin")
	h := newHarness(t, createDefaultConfig(), nil, nil)
	h.start()
	h.feed(records)
	before := h.traces.SpanCount()
	h.shutdown()
	require.Greater(t, h.traces.SpanCount(), before, "the open turn is flushed as dangling")
}

// What the journal keeps shrinks with the turns: once a session's turns
// are all closed, none of its records remain, only its mark.
func TestJournalKeepsOnlyOpenTurns(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t),
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl"), "multi")
	h := journaled(t, t.TempDir())
	var maxChunks int
	for _, b := range batches(records, 3) {
		h.feed(b)
		j := h.core().journal.(*journal.Storage)
		for _, id := range j.Sessions() {
			maxChunks = max(maxChunks, len(j.Chunks(id)))
		}
	}
	require.Positive(t, maxChunks, "an open turn's records were journaled")
	require.Zero(t, h.core().engine.OpenTurns())
	j := h.core().journal.(*journal.Storage)
	for _, id := range j.Sessions() {
		require.Empty(t, j.Chunks(id), "session %s: chunks left with no turn open", id)
		raw, err := j.Get(context.Background(), journal.ChunkKey(id, 0))
		require.NoError(t, err)
		require.Nil(t, raw, "session %s: chunk 0 still stored", id)
	}
	h.shutdown()
}

// A storage extension that is missing or is no storage fails Start.
func TestJournalStorageMissing(t *testing.T) {
	cfg := createDefaultConfig()
	id := component.MustNewID("file_storage")
	cfg.Storage = &id
	h := newHarness(t, cfg, nil, nil)
	err := h.toTr.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "storage extension file_storage not found")
	h.shutdown()
}

// After a restart the connector counts what the journal restored and what
// the source delivers again that the journal already had: a restart from
// a checkpoint two batches behind redelivers exactly the events of those
// two batches, and every one of them is also a dropped duplicate.
func TestJournalCountsRestoredAndRedelivered(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t),
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl"), "multi")
	bs := batches(records, 3)
	// The events the last two batches before the kill apply, measured on
	// a run without a journal.
	ref := newHarness(t, createDefaultConfig(), nil, nil)
	ref.start()
	k := 0
	for ; k < len(bs) && (k < 3 || ref.core().engine.OpenTurns() == 0); k++ {
		ref.feed(bs[k])
	}
	require.Less(t, k, len(bs), "a batch after the third leaves a turn open")
	require.Positive(t, ref.core().engine.OpenTurns())
	all := ref.core().engine.Stats().Events
	ref.shutdown()
	ref2 := newHarness(t, createDefaultConfig(), nil, nil)
	ref2.start()
	for _, b := range bs[:k-2] {
		ref2.feed(b)
	}
	lastTwo := all - ref2.core().engine.Stats().Events
	ref2.shutdown()
	require.Positive(t, lastTwo)

	dir := t.TempDir()
	run1 := journaled(t, dir)
	for _, b := range bs[:k] {
		run1.feed(b)
	}
	require.Zero(t, run1.selfSum(metadata.MetricJournalRestored), "nothing to restore at a first start")
	run1.crash()

	run2 := journaled(t, dir)
	require.Positive(t, run2.selfSum(metadata.MetricJournalRestored), "the open turn's events were re-applied")
	for _, b := range bs[k-2:] {
		run2.feed(b)
	}
	require.EqualValues(t, lastTwo, run2.selfSum(metadata.MetricRedelivered))
	require.GreaterOrEqual(t, run2.selfSum(metadata.MetricEventsDropped, "reason=duplicate"), int64(lastTwo))
	// Once the source is past the journal's position nothing more counts.
	run2.feed(bs[k-1])
	require.EqualValues(t, lastTwo, run2.selfSum(metadata.MetricRedelivered), "a later duplicate is no redelivery after the restart")
	require.Zero(t, run2.selfGauge(metadata.MetricJournalLag))
	run2.shutdown()
}

// A crash between a pass's emission and its journal write — the one
// instant at which the protocol emits a turn twice — re-emits exactly the
// turns of that pass, with the same ids and the same content, so a backend
// that folds identical spans shows each once; nothing is lost.
func TestJournalCrashBetweenEmitAndWrite(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t),
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl"), "multi")
	bs := batches(records, 3)
	// k: the second batch that closes a turn.
	ref := newHarness(t, createDefaultConfig(), nil, nil)
	ref.start()
	k, closing := -1, 0
	for i, b := range bs {
		before := ref.traces.SpanCount()
		ref.feed(b)
		if ref.traces.SpanCount() > before {
			if closing++; closing == 2 {
				k = i
			}
		}
	}
	require.Positive(t, k, "two batches close turns")
	want := ref.allTraces()
	ref.shutdown()

	dir := t.TempDir()
	tr := &trail{}
	cfg := createDefaultConfig()
	id := journalStorageID
	cfg.Storage = &id
	run1 := newHarness(t, cfg, nil, nil)
	inner := realStorage(t, dir).GetExtensions()[journalStorageID].(storage.Extension)
	host := storagetest.NewStorageHost().WithExtension(journalStorageID, trailStorage{Extension: inner, trail: tr})
	require.NoError(t, run1.toMt.Start(context.Background(), host))
	require.NoError(t, run1.toTr.Start(context.Background(), host))
	for _, b := range bs[:k] {
		run1.feed(b)
	}
	// Batch k closes a turn, and its journal write is lost: the process
	// died right after the emission.
	tr.mu.Lock()
	tr.failAt = tr.writes + 1
	tr.mu.Unlock()
	before := run1.traces.SpanCount()
	require.Error(t, run1.toTr.ConsumeLogs(context.Background(), bs[k]))
	require.Greater(t, run1.traces.SpanCount(), before)
	firstCopy := run1.traces.AllTraces()[len(run1.traces.AllTraces())-1]
	run1.crash()

	// The source never had that batch acknowledged: it delivers it again.
	run2 := journaled(t, dir)
	for _, b := range bs[k:] {
		run2.feed(b)
	}
	require.Positive(t, run2.traces.SpanCount())
	secondCopy := run2.traces.AllTraces()[0]
	require.NoError(t, ptracetest.CompareTraces(firstCopy, secondCopy), "the re-emitted turn is the same")
	// Without the second copy, the two runs emitted exactly what one
	// uninterrupted run emits.
	got := mergeTraces(run1, run2)
	rs := got.ResourceSpans()
	seen := map[string]bool{}
	dedup := ptrace.NewTraces()
	for i := 0; i < rs.Len(); i++ {
		ss := rs.At(i).ScopeSpans()
		key := ""
		for j := 0; j < ss.Len(); j++ {
			for s := 0; s < ss.At(j).Spans().Len(); s++ {
				key += ss.At(j).Spans().At(s).SpanID().String()
			}
		}
		if !seen[key] {
			seen[key] = true
			rs.At(i).CopyTo(dedup.ResourceSpans().AppendEmpty())
		}
	}
	require.NoError(t, ptracetest.CompareTraces(want, dedup, ptracetest.IgnoreResourceSpansOrder()))
	run2.shutdown()
}

// A crash while the traces consumer refuses closed turns loses none of
// them: the journal was kept back, so the restart restores the turns open,
// and the batches the sender never saw acknowledged close them again. Over
// both runs every turn of the log is accepted exactly once.
func TestJournalHeldTurnsSurviveCrash(t *testing.T) {
	for _, rel := range journalFiles[:3] {
		t.Run(filepath.Base(filepath.Dir(rel)), func(t *testing.T) {
			records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t), rel), "s-held")
			bs := batches(records, 4)
			want := referenceTraces(t, bs)

			dir := t.TempDir()
			refusing := &switchableTraces{}
			run1 := journaledTo(t, dir, refusing)
			acked := 0
			for i, b := range bs {
				if i == 2 {
					refusing.set(errors.New("sending queue is full"))
				}
				if err := run1.toTr.ConsumeLogs(context.Background(), b); err != nil {
					require.ErrorIs(t, err, errHeld)
					break
				}
				acked++
			}
			require.Less(t, acked, len(bs), "the traces consumer refused a batch's turns")
			require.Positive(t, run1.core().gauges.heldTurns.Load(), "turns were held at the crash")
			run1.crash()

			run2 := journaled(t, dir)
			for _, b := range bs[acked:] {
				run2.feed(b)
			}
			got := refusing.all()
			run2.allTraces().ResourceSpans().MoveAndAppendTo(got.ResourceSpans())
			require.NoError(t, ptracetest.CompareTraces(want, got, ptracetest.IgnoreResourceSpansOrder()))
			run2.shutdown()
		})
	}
}

// Journal values that cannot be read do not stop the start: each damaged
// session starts afresh (one error line, counted, its values deleted), a
// damaged bucket list loses the sessions it listed, and every other
// session is restored with its open turn.
func TestJournalDamagedValues(t *testing.T) {
	dir := t.TempDir()
	paths := []string{
		filepath.Join(testcorpus.Dir(t), journalFiles[0]),
		filepath.Join(testcorpus.Dir(t), journalFiles[3]),
		filepath.Join(testcorpus.Dir(t), journalFiles[4]),
	}
	run1 := journaled(t, dir)
	var ids []string
	for i, p := range paths {
		records, _ := buildRecords(t, p, fmt.Sprintf("damaged-%d", i))
		sid, ok := records.ResourceLogs().At(0).Resource().Attributes().Get("session.id")
		require.True(t, ok)
		id := sid.Str()
		ids = append(ids, id)
		for _, b := range batches(records, 8) { // up to a turn open in each
			run1.feed(b)
			if m, ok := run1.core().engine.Mark(id); ok && m.Open != 0 {
				break
			}
		}
	}
	require.Equal(t, 3, run1.core().engine.OpenTurns())
	run1.crash()

	// Damage the first session's entry and the bucket list of the second.
	run2 := newHarness(t, func() *Config { c := createDefaultConfig(); id := journalStorageID; c.Storage = &id; return c }(), nil, nil)
	host := realStorage(t, dir)
	ext, _ := host.GetExtensions()[journalStorageID].(storage.Extension)
	client, err := ext.GetClient(context.Background(), component.KindConnector, component.MustNewID("turn_state"), "turns")
	require.NoError(t, err)
	require.NoError(t, client.Set(context.Background(), journal.SessionKey(ids[0]), []byte("{not json")))
	require.NoError(t, client.Set(context.Background(), journal.BucketKeyOf(ids[1]), []byte("\x00\x01garbage")))
	require.NoError(t, client.Close(context.Background()))
	require.NotEqual(t, journal.BucketKeyOf(ids[1]), journal.BucketKeyOf(ids[2]), "the test needs the undamaged session in a bucket of its own")

	require.NoError(t, run2.toMt.Start(context.Background(), host))
	require.NoError(t, run2.toTr.Start(context.Background(), host), "damaged values do not stop the start")
	assert.EqualValues(t, 2, run2.selfSum(metadata.MetricJournalDamaged))
	assert.Equal(t, 1, run2.core().engine.OpenTurns(), "the undamaged session is restored")
	_, ok := run2.core().engine.Mark(ids[2])
	assert.True(t, ok)
	run2.shutdown()

	// The damaged values were deleted: the next start meets none.
	run3 := journaled(t, dir)
	assert.Zero(t, run3.selfSum(metadata.MetricJournalDamaged))
	run3.shutdown()
}
