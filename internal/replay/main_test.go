package replay

import (
	"os"
	"testing"
)

// TestMain poisons the decoder's reused row memory (sessionlog.Arena), so
// that a page keeping a view into a row instead of its own copy shows
// garbage and fails its test.
func TestMain(m *testing.M) {
	os.Setenv("DSH_ARENA_POISON", "1")
	os.Exit(m.Run())
}
