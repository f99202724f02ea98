package turnstate

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/client"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog/changelogtest"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/journal"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"

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

// BenchmarkChangelogCost measures what the changelog journal costs, the way
// the kafka receiver drives the connector: 24 partitions consumed at once,
// each a goroutine handing its messages (one session's batch of 16 corpus
// records each, offsets in order, in the receiver's client metadata) to
// ConsumeLogs one after the other. The journal is off, or on an
// in-process kfake cluster that answers each request rtt late (a network
// round trip). It reports events/s, and for the changelog the records and
// bytes (keys, values and the writer header) written per event and the
// batches that read the changelog to its end.
func BenchmarkChangelogCost(b *testing.B) {
	const partitions = 24
	files := []string{
		"v0/apps/web/tests/snapshots/goal-multi-turn-actions/session.jsonl",
		"v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
		"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl",
		"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
	}
	msgs := make([][]plog.Logs, partitions) // per partition, in offset order
	events := 0
	for p := range partitions {
		for _, rel := range files {
			ld, n := buildRecords(b, corpusPath(b, rel), "s")
			events += n
			for _, batch := range batches(renamed(ld, fmt.Sprintf("-%d", p)), 16) {
				batch.MarkReadOnly()
				msgs[p] = append(msgs[p], batch)
			}
		}
	}
	for _, withJournal := range []bool{false, true} {
		for _, rtt := range []time.Duration{0, 2 * time.Millisecond} {
			if !withJournal && rtt > 0 {
				continue
			}
			name := "journal=none"
			if withJournal {
				name = fmt.Sprintf("journal=changelog/rtt=%s", rtt)
			}
			b.Run(name, func(b *testing.B) {
				var records, bytes, reads int64
				for range b.N {
					cfg := createDefaultConfig()
					if withJournal {
						cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
						if err != nil {
							b.Fatal(err)
						}
						defer cluster.Close()
						changelogtest.Delay(cluster, rtt)
						cfg.Changelog = &ChangelogConfig{Brokers: cluster.ListenAddrs(), Owner: "bench", Partitions: partitions, Timeout: 10 * time.Second}
					}
					h := newHarness(b, cfg, consumertest.NewNop(), consumertest.NewNop())
					h.start()
					consumePartitions(b, h, msgs)
					if withJournal {
						st := h.core().journal.(*journal.Changelog).Log().Stats()
						records, bytes = records+st.Records, bytes+st.Bytes
						reads += h.selfSum(metadata.MetricViewSyncs)
					}
					if err := h.toTr.Shutdown(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				n := float64(events) * float64(b.N)
				if withJournal {
					b.ReportMetric(float64(records)/n, "records/event")
					b.ReportMetric(float64(bytes)/n, "bytes/event")
					b.ReportMetric(float64(reads)/float64(b.N), "reads/run")
				}
				b.ReportMetric(n/b.Elapsed().Seconds(), "events/s")
			})
		}
	}
}

// consumePartitions hands each partition's messages to the connector from
// a goroutine of its own, in order, with the kafka receiver's metadata.
func consumePartitions(b testing.TB, h *harness, msgs [][]plog.Logs) {
	var wg sync.WaitGroup
	errs := make(chan error, len(msgs))
	for p, ms := range msgs {
		wg.Go(func() {
			for off, ld := range ms {
				ctx := client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(map[string][]string{
					"kafka.topic": {"dsh-session-events"}, "kafka.partition": {strconv.Itoa(p)}, "kafka.offset": {strconv.Itoa(off)},
				})})
				if err := h.toTr.ConsumeLogs(ctx, ld); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
