package turnrender

import (
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// benchInputs are the events of turnengine's BenchmarkEngine: 200k events
// of one synthetic session, three steps per turn.
func benchInputs() []turnengine.Input {
	src := testlog.NewSource("bench", 3)
	inputs := make([]turnengine.Input, 200_000)
	for i := range inputs {
		inputs[i] = turnengine.Input{SessionID: src.Session(), Event: src.Next(), Format: src.Format(), Header: src.Header()}
	}
	return inputs
}

// BenchmarkEngineMetrics measures events/s through the engine observed by
// Metrics, as the connector runs it (decoding excluded): turnengine's
// BenchmarkEngine plus the metric aggregation.
func BenchmarkEngineMetrics(b *testing.B) {
	inputs := benchInputs()
	b.ResetTimer()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		e := turnengine.New(turnengine.Config{Observer: NewMetrics(0)})
		for i := range inputs {
			e.Ingest(inputs[i], epoch)
		}
		e.Flush(turnengine.CauseEndOfInput, epoch)
		e.Drain()
		n += len(inputs)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkTraces measures the rendering of closed turns as OTLP traces:
// the turns of BenchmarkEngineMetrics's input, rendered at once.
func BenchmarkTraces(b *testing.B) {
	e := turnengine.New(turnengine.Config{})
	for _, in := range benchInputs() {
		e.Ingest(in, epoch)
	}
	e.Flush(turnengine.CauseEndOfInput, epoch)
	turns := e.Drain()
	b.ReportAllocs()
	spans := 0
	for b.Loop() {
		spans += Traces(testScope, turns).SpanCount()
	}
	b.ReportMetric(float64(spans)/b.Elapsed().Seconds(), "spans/s")
}
