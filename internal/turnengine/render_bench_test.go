package turnengine

import "testing"

// BenchmarkTraces measures the rendering of closed turns as OTLP traces:
// the turns of BenchmarkEngine's input, rendered at once.
func BenchmarkTraces(b *testing.B) {
	src := newEventSource("bench", 3)
	e := New(Config{})
	for range 200_000 {
		e.Ingest(src.input(), epoch)
	}
	e.Flush(CauseEndOfInput, epoch)
	turns := e.Drain()
	b.ReportAllocs()
	spans := 0
	for b.Loop() {
		spans += Traces(turns).SpanCount()
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}
