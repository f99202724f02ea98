package sessionlog

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRowSeqs: a row's seq range is its first and last event's seqs; a row
// without events has none (-1).
func TestRowSeqs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		row         Row
		first, last int64
	}{
		{"header", Row{Kind: RowHeader}, -1, -1},
		{"event", Row{Kind: RowEvent, Events: []Event{{Seq: 7}}}, 7, 7},
		{"packed", Row{Kind: RowPacked, Events: []Event{{Seq: 3}, {Seq: 4}, {Seq: 5}}}, 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.first, tc.row.FirstSeq())
			assert.Equal(t, tc.last, tc.row.LastSeq())
		})
	}
}
