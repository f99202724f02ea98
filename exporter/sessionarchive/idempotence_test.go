package sessionarchive

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// shuffled returns recs with each window of w records shuffled: records
// arrive out of order, but never further out than w.
func shuffled(recs []record, w int, rng *rand.Rand) []record {
	out := append([]record(nil), recs...)
	for i := 0; i < len(out); i += w {
		win := out[i:min(i+w, len(out))]
		rng.Shuffle(len(win), func(a, b int) { win[a], win[b] = win[b], win[a] })
	}
	return out
}

// Delivering a session's records twice, out of order (within the pending
// bound), in batches of any size, and split across exporter restarts on
// the same root, gives the same bytes as one clean delivery: nothing is
// written twice, nothing is lost.
func TestRedeliveryAndRestartsGiveTheSameBytes(t *testing.T) {
	dir := testcorpus.Dir(t)
	for _, compression := range []string{CompressionNone, CompressionZstd} {
		for i, rel := range testcorpus.Files(t) {
			t.Run(compression+"/"+rel, func(t *testing.T) {
				t.Parallel()
				path := filepath.Join(dir, rel)
				recs := corpusRecords(t, path, fallbackSession)
				want := expect(t, path, compression == CompressionZstd)
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				const window = 8
				run := func(t *testing.T, deliveries ...[]record) {
					root := t.TempDir()
					cfg := testConfig(root)
					cfg.Compression = compression
					cfg.MaxPendingRows = window
					cfg.Fsync = FsyncNone // thousands of tiny batches; durability is not what this tests
					for _, d := range deliveries {
						deliver(t, cfg, d, 1+rng.IntN(5))
					}
					checkArchive(t, root, want)
				}
				t.Run("twice_shuffled", func(t *testing.T) {
					both := append(shuffled(recs, window, rng), shuffled(recs, window, rng)...)
					run(t, both)
				})
				t.Run("restarts", func(t *testing.T) {
					// Three exporters, each starting where the previous one
					// stopped — and each re-delivering some of its rows.
					a, b := len(recs)/3, 2*len(recs)/3
					run(t, shuffled(recs[:a], window, rng),
						shuffled(recs[max(0, a-5):b], window, rng),
						shuffled(recs[max(0, b-20):], window, rng))
				})
				t.Run("restart_after_complete", func(t *testing.T) {
					run(t, recs, shuffled(recs, window, rng))
				})
			})
		}
	}
}

// A crash mid-write leaves a torn last row (plain) or frame (zstd). The
// next exporter on the root cuts it off and, given the rows again (the
// unacknowledged batch is re-delivered), rebuilds the same bytes.
func TestResumeAfterTornWrite(t *testing.T) {
	dir := testcorpus.Dir(t)
	path := filepath.Join(dir, "v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl")
	recs := corpusRecords(t, path, fallbackSession)
	for _, compression := range []string{CompressionNone, CompressionZstd} {
		for _, cut := range []int{1, 7, 40} {
			t.Run(compression, func(t *testing.T) {
				want := expect(t, path, compression == CompressionZstd)
				root := t.TempDir()
				cfg := testConfig(root)
				cfg.Compression = compression
				deliver(t, cfg, recs, 4) // one small frame per batch
				var archived string
				for rel := range want {
					archived = filepath.Join(root, rel)
				}
				fi, err := os.Stat(archived)
				require.NoError(t, err)
				require.NoError(t, os.Truncate(archived, fi.Size()-int64(cut)))
				deliver(t, cfg, recs[len(recs)/2:], 3)
				checkArchive(t, root, want)
			})
		}
	}
}
