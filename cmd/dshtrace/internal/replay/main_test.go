package replay

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain poisons the decoder's reused row memory (sessionlog.Arena), so
// that a page keeping a view into a row instead of its own copy shows
// garbage and fails its test; and requires every test to leave no
// goroutine behind (a page's rendering workers among them).
func TestMain(m *testing.M) {
	os.Setenv("DSH_ARENA_POISON", "1")
	goleak.VerifyTestMain(m)
}
