package turnstate

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
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

// BenchmarkChangelogCost measures what the changelog journal costs: the
// same corpus sessions, in batches of 16 records (each batch one pass and
// one changelog write), through a connector journaling to an in-process
// kfake cluster. It reports the records and bytes (keys, values and the
// writer header) written per event, and events/s with the broker round
// trips (on loopback, in process: a lower bound of a real broker's cost).
func BenchmarkChangelogCost(b *testing.B) {
	var bs []plog.Logs
	events := 0
	for _, rel := range []string{
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl",
		"v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
		"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl",
		"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
	} {
		ld, n := buildRecords(b, corpusPath(b, rel), "s-"+rel)
		events += n
		for _, batch := range batches(ld, 16) {
			batch.MarkReadOnly()
			bs = append(bs, batch)
		}
	}
	ctx := context.Background()
	var records, bytes int64
	b.ResetTimer()
	for range b.N {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			b.Fatal(err)
		}
		cfg := createDefaultConfig()
		cfg.Changelog = &ChangelogConfig{Brokers: cluster.ListenAddrs(), Owner: "bench", Partitions: 4, Timeout: 10 * time.Second}
		h := newHarness(b, cfg, consumertest.NewNop(), consumertest.NewNop())
		h.start()
		for _, batch := range bs {
			if err := h.toTr.ConsumeLogs(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		st := h.core().journal.log.Stats()
		records, bytes = records+st.Records, bytes+st.Bytes
		if err := h.toTr.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
		cluster.Close()
	}
	n := float64(events) * float64(b.N)
	b.ReportMetric(float64(records)/n, "records/event")
	b.ReportMetric(float64(bytes)/n, "bytes/event")
	b.ReportMetric(float64(len(bs))*float64(b.N)/n, "batches/event")
	b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
}
