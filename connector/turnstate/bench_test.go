package turnstate

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
)

// BenchmarkConsumeLogs measures the connector alone: corpus sessions in
// batches of 64 records through ConsumeLogs of both instances (each batch
// one pass), to nop consumers, without a journal.
func BenchmarkConsumeLogs(b *testing.B) {
	var bs []plog.Logs
	events := 0
	for _, rel := range []string{
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl",
		"v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
		"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl",
		"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
	} {
		ld, n := buildRecords(b, corpusPath(b, rel), "s")
		events += n
		for _, batch := range batches(ld, 64) {
			batch.MarkReadOnly()
			bs = append(bs, batch)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		h := newHarness(b, createDefaultConfig(), consumertest.NewNop(), consumertest.NewNop())
		for _, batch := range bs {
			if err := h.toTr.ConsumeLogs(ctx, batch); err != nil {
				b.Fatal(err)
			}
			if err := h.toMt.ConsumeLogs(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		if err := h.toTr.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
