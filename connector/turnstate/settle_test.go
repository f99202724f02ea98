package turnstate

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// trail records, in order, the emissions and the journal writes of a
// connector, and can make the writes fail.
type trail struct {
	mu     sync.Mutex
	steps  []string
	failAt int // fail the journal writes from this one on (1-based; 0: never)
	writes int
}

func (tr *trail) add(step string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.steps = append(tr.steps, step)
}

func (tr *trail) all() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.steps...)
}

// trailStorage is a storage extension that hands out clients of inner
// whose Batch is recorded in the trail (and fails from trail.failAt on).
type trailStorage struct {
	storage.Extension
	trail *trail
}

func (s trailStorage) GetClient(ctx context.Context, kind component.Kind, id component.ID, name string) (storage.Client, error) {
	c, err := s.Extension.GetClient(ctx, kind, id, name)
	if err != nil {
		return nil, err
	}
	return trailClient{Client: c, trail: s.trail}, nil
}

type trailClient struct {
	storage.Client
	trail *trail
}

func (c trailClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	tr := c.trail
	tr.mu.Lock()
	tr.writes++
	fail := tr.failAt > 0 && tr.writes >= tr.failAt
	tr.mu.Unlock()
	if fail {
		tr.add("write failed")
		return errors.New("disk full")
	}
	tr.add("write")
	return c.Client.Batch(ctx, ops...)
}

// trailed is a journaled harness whose journal writes and trace emissions
// are recorded in tr.
func trailed(t *testing.T, tr *trail) *harness {
	t.Helper()
	cfg := createDefaultConfig()
	id := journalStorageID
	cfg.Storage = &id
	sink := new(consumertest.TracesSink)
	next, err := consumer.NewTraces(func(ctx context.Context, td ptrace.Traces) error {
		tr.add("emit")
		return sink.ConsumeTraces(ctx, td)
	})
	require.NoError(t, err)
	h := newHarness(t, cfg, next, nil)
	h.traces = sink
	inner := realStorage(t, t.TempDir()).GetExtensions()[journalStorageID].(storage.Extension)
	host := storagetest.NewStorageHost().WithExtension(journalStorageID, trailStorage{Extension: inner, trail: tr})
	require.NoError(t, h.toMt.Start(context.Background(), host))
	require.NoError(t, h.toTr.Start(context.Background(), host))
	return h
}

// Every pass that closes turns emits them before its journal write, so the
// journal lets go of a turn only once it is out; each batch's write lands
// before ConsumeLogs returns.
func TestSettleEmitsBeforeJournaling(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t),
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl"), "multi")
	tr := &trail{}
	h := trailed(t, tr)
	for _, b := range batches(records, 3) {
		before := len(tr.all())
		h.feed(b)
		pass := tr.all()[before:]
		require.NotEmpty(t, pass, "a batch with session records writes the journal")
		assert.Equal(t, "write", pass[len(pass)-1], "the batch's write landed before ConsumeLogs returned: %v", pass)
		if pass[0] == "emit" {
			assert.Equal(t, []string{"emit", "write"}, pass)
		} else {
			assert.Equal(t, []string{"write"}, pass)
		}
	}
	assert.Positive(t, h.traces.SpanCount())
	assert.Contains(t, tr.all(), "emit")
	h.shutdown()
}

// A failed journal write fails the batch (its sender retries it) and is
// counted; the turns the batch closed went out before it. A failed write
// after a sweep is only logged: no sender waits for it.
func TestJournalWriteFailure(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t),
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl"), "multi")
	tr := &trail{}
	h := trailed(t, tr)
	bs := batches(records, 3)
	ctx := context.Background()
	// Journal normally until a batch leaves a turn open.
	i := 0
	for ; i < len(bs) && h.core().engine.OpenTurns() == 0; i++ {
		require.NoError(t, h.toTr.ConsumeLogs(ctx, bs[i]))
	}
	require.Less(t, i, len(bs), "some batch leaves a turn open")
	tr.mu.Lock()
	tr.failAt = tr.writes + 1
	tr.mu.Unlock()

	// From now on every batch is refused, and counted.
	spans := h.traces.SpanCount()
	err := h.toTr.ConsumeLogs(ctx, bs[i])
	require.ErrorContains(t, err, "write the journal: disk full")
	require.EqualValues(t, 1, h.selfSum(metadata.MetricJournalFailures))
	steps := tr.all()
	if h.traces.SpanCount() > spans {
		assert.Equal(t, []string{"emit", "write failed"}, steps[len(steps)-2:], "the closed turns went out first")
	} else {
		assert.Equal(t, "write failed", steps[len(steps)-1])
	}
	failed := int64(1)
	for i++; i < len(bs) && h.core().engine.OpenTurns() == 0; i++ {
		require.Error(t, h.toTr.ConsumeLogs(ctx, bs[i]))
		failed++
	}
	require.Positive(t, h.core().engine.OpenTurns(), "a turn is open for the sweep")

	spans = h.traces.SpanCount()
	h.clock.Advance(h.cfg.DanglingTimeout + time.Second)
	h.core().sweep(ctx)
	assert.Equal(t, failed+1, h.selfSum(metadata.MetricJournalFailures))
	assert.Greater(t, h.traces.SpanCount(), spans, "the sweep emitted the timed-out turn before its write failed")
	steps = tr.all()
	assert.Equal(t, []string{"emit", "write failed"}, steps[len(steps)-2:])
	// The sessions of the failed writes are behind until a write lands;
	// the next pass rewrites them.
	assert.Positive(t, h.selfGauge(metadata.MetricJournalLag))
	tr.mu.Lock()
	tr.failAt = 0
	tr.mu.Unlock()
	h.core().sweep(ctx)
	assert.Zero(t, h.selfGauge(metadata.MetricJournalLag))
	h.shutdown()
}
