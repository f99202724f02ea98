package turnstate

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Rows read in a batch are freed by the next (sessionlog.Arena): poison
	// them, so that anything kept past its batch shows in the results.
	os.Setenv("DSH_ARENA_POISON", "1")
	goleak.VerifyTestMain(m)
}
