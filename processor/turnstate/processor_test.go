package turnstate

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
)

// conformance runs the log at path, in each shape dsh's events reach a
// collector in, through the processor and through the turn_state
// connector, in batches of 4 records, and checks the processor's stamps
// against the connector's spans.
func conformance(t *testing.T, path string) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			ld := sh.build(t, path)
			bs := batches(ld, 4)
			h := newHarness(t, createDefaultConfig())
			var out []plog.Logs
			for _, b := range bs {
				out = append(out, h.feed(b))
			}
			spans := connectorSpans(t, bs)
			if sh.name == "receiver" { // only our records carry the header that says "fork"
				if parent, ok := inheritedRecords(t, path); ok {
					for k, sp := range connectorSpans(t, batches(parent, 4)) {
						spans[k] = sp
					}
				}
			}
			stamped := checkStamps(t, out, spans)
			assert.Equal(t, int64(stamped), h.counter(metadata.MetricRecordsStamped))
			assert.Equal(t, int64(ld.LogRecordCount()), h.counter(metadata.MetricRecordsStamped)+h.counter(metadata.MetricRecordsUnplaced)+
				h.counter(metadata.MetricRecordsPassed)+h.counter(metadata.MetricRecordsDuplicate)+h.counter(metadata.MetricRecordsInvalid),
				"every record is counted once")
			assert.Zero(t, h.counter(metadata.MetricRecordsDuplicate))
			if len(spans) > 0 {
				assert.NotZero(t, stamped)
			}
		})
	}
}

func TestDialects(t *testing.T) {
	for _, path := range testcorpus.Testdata(t) {
		t.Run(filepath.Base(path), func(t *testing.T) { conformance(t, path) })
	}
}

func TestCorpus(t *testing.T) {
	dir := testcorpus.Dir(t)
	for _, rel := range testcorpus.Files(t) {
		t.Run(rel, func(t *testing.T) { conformance(t, filepath.Join(dir, rel)) })
	}
}
