package changelog

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// BenchmarkViewMemory measures what a view holds: a changelog of
// CHANGELOG_SESSIONS sessions (default 1,000,000), each its mark (a
// 200-byte value, the size of the connector's journal entries) and, for
// every tenth, an open turn's chunk of 2 KiB, each naming one of 24 source
// partitions (partitioned by source, as the connector writes it), is
// written to an in-process cluster; then a new process's view follows the
// sources of one instance of a group — all 24 alone, 8 of 24 with three
// instances, 2 of 24 with twelve — and is read to the end, and the live
// heap it added is reported, in all and per session it holds.
func BenchmarkViewMemory(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("CHANGELOG_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	const sources = 24
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cfg := Config{Brokers: c.ListenAddrs(), Topic: "state", Owner: "writer", Partitions: sources, ReplicationFactor: -1,
		MaxRecordBytes: 1 << 20, Group: sessionGroup, BySource: true}
	w, err := Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	mark, chunk := make([]byte, 200), make([]byte, 2048)
	for i := 0; i < n; i += 1000 {
		var ops []Op
		for k := i; k < min(i+1000, n); k++ {
			id := fmt.Sprintf(`s/"session-%08d"`, k)
			src := fmt.Sprintf("dsh-session-events/%d", k%sources)
			ops = append(ops, Op{Key: id, Value: mark, Source: src})
			if k%10 == 0 {
				ops = append(ops, Op{Key: id + "/c/0", Value: chunk, Source: src})
			}
		}
		if err := w.Write(ctx, ops); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	for _, instances := range []int{1, 3, 12} {
		b.Run(fmt.Sprintf("instances=%d", instances), func(b *testing.B) {
			for range b.N {
				before := liveHeap()
				cfg.Owner = "reader"
				r, err := Open(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				for s := range sources / instances {
					r.Follow(fmt.Sprintf("dsh-session-events/%d", s))
				}
				if err := r.Sync(ctx); err != nil {
					b.Fatal(err)
				}
				after := liveHeap()
				keys, groups, bytes := r.Size()
				b.ReportMetric(float64(after-before)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(after-before)/float64(groups), "heap-bytes/session")
				b.ReportMetric(float64(groups), "sessions")
				b.ReportMetric(float64(keys), "keys")
				b.ReportMetric(float64(bytes)/(1<<20), "value-MiB")
				r.Close()
			}
		})
	}
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
