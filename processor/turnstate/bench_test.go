package turnstate

import (
	"context"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// BenchmarkProcessLogs stamps every corpus log, as dsh's v4 export and as
// the session_event receiver's records, in batches of 64 records; a fresh
// processor per iteration, so nothing is a duplicate.
func BenchmarkProcessLogs(b *testing.B) {
	for _, sh := range shapes[:2] {
		b.Run(sh.name, func(b *testing.B) {
			dir := testcorpus.Dir(b)
			var bs []plog.Logs
			records := 0
			for _, rel := range testcorpus.Files(b) {
				ld := sh.build(b, filepath.Join(dir, rel))
				records += ld.LogRecordCount()
				bs = append(bs, batches(ld, 64)...)
			}
			set := componenttest.NewNopTelemetrySettings()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				in := make([]plog.Logs, len(bs))
				for i, ld := range bs {
					in[i] = plog.NewLogs()
					ld.CopyTo(in[i])
				}
				p, err := newStamper(createDefaultConfig(), set, nowEpoch)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for _, ld := range in {
					if _, err := p.processLogs(context.Background(), ld); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(records*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
