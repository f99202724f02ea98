package turnstate

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/dshtrace/dshtrace/internal/logrecord"
)

// rounded is md with its float values and histogram sums rounded to 9
// significant digits (sums that differ in their last bits round alike but
// for a chance of about one in 10⁷ per value).
func rounded(md pmetric.Metrics) pmetric.Metrics {
	out := pmetric.NewMetrics()
	md.CopyTo(out)
	r := func(f float64) float64 {
		g, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 9, 64), 64)
		return g
	}
	rms := out.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				switch m := ms.At(k); m.Type() {
				case pmetric.MetricTypeSum:
					for p := 0; p < m.Sum().DataPoints().Len(); p++ {
						dp := m.Sum().DataPoints().At(p)
						if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
							dp.SetDoubleValue(r(dp.DoubleValue()))
						}
					}
				case pmetric.MetricTypeGauge:
					for p := 0; p < m.Gauge().DataPoints().Len(); p++ {
						dp := m.Gauge().DataPoints().At(p)
						if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
							dp.SetDoubleValue(r(dp.DoubleValue()))
						}
					}
				case pmetric.MetricTypeHistogram:
					for p := 0; p < m.Histogram().DataPoints().Len(); p++ {
						dp := m.Histogram().DataPoints().At(p)
						dp.SetSum(r(dp.Sum()))
					}
				}
			}
		}
	}
	return out
}

// renamed is ld with every session id (resource and record attribute) suffixed.
func renamed(ld plog.Logs, suffix string) plog.Logs {
	out := plog.NewLogs()
	ld.CopyTo(out)
	rls := out.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		if v, ok := rl.Resource().Attributes().Get(logrecord.AttrSessionID); ok {
			v.SetStr(v.Str() + suffix)
		}
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				if v, ok := lrs.At(k).Attributes().Get(logrecord.AttrSessionID); ok {
					v.SetStr(v.Str() + suffix)
				}
			}
		}
	}
	return out
}

// Many sessions' batches consumed at once — as the file transport's
// readers and concurrent HTTP requests deliver them, each session's in its
// order — give the same spans and metrics as the same batches one after
// another: a batch decoded while the engine works on another keeps its
// rows (the component tests poison freed arena memory) and reaches the
// engine whole.
func TestConcurrentSessions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "dialects", "*.jsonl"))
	require.NoError(t, err)
	files = append(files, filepath.Join("..", "..", "testdata", "seed", "sample.jsonl"))
	require.GreaterOrEqual(t, len(files), 8)
	const copies = 6
	var sessions [][]plog.Logs // each session's batches, in order
	for _, f := range files {
		ld, _ := buildRecords(t, f, "s-"+filepath.Base(f))
		for c := range copies {
			bs := batches(renamed(ld, fmt.Sprintf("-%d", c)), 2)
			for _, b := range bs {
				b.MarkReadOnly()
			}
			sessions = append(sessions, bs)
		}
	}

	serial := newHarness(t, createDefaultConfig(), nil, nil)
	serial.start()
	for round := 0; ; round++ { // the sessions interleaved, one batch each in turn
		fed := false
		for _, bs := range sessions {
			if round < len(bs) {
				serial.feed(bs[round])
				fed = true
			}
		}
		if !fed {
			break
		}
	}
	serial.shutdown()

	concurrent := newHarness(t, createDefaultConfig(), nil, nil)
	concurrent.start()
	var wg sync.WaitGroup
	for _, bs := range sessions {
		wg.Go(func() {
			for _, b := range bs {
				concurrent.feed(b)
			}
		})
	}
	wg.Wait()
	concurrent.shutdown()

	require.NoError(t, ptracetest.CompareTraces(normalizeDangling(serial.allTraces()), normalizeDangling(concurrent.allTraces()),
		ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
	// Float sums may differ in their last bits: they are added up in
	// another order.
	require.NoError(t, pmetrictest.CompareMetrics(rounded(serial.lastMetrics()), rounded(concurrent.lastMetrics()),
		pmetrictest.IgnoreMetricDataPointsOrder(), pmetrictest.IgnoreStartTimestamp(), pmetrictest.IgnoreTimestamp(),
		pmetrictest.IgnoreResourceMetricsOrder(), pmetrictest.IgnoreScopeMetricsOrder(), pmetrictest.IgnoreMetricsOrder(),
		pmetrictest.IgnoreExemplars()))
	require.Equal(t, serial.core().engine.Stats(), concurrent.core().engine.Stats())
	t.Logf("%d sessions, %d spans", len(sessions), concurrent.allTraces().SpanCount())
}
