package filesource

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Rows are freed once handled (sessionlog.Arena): poison them, so that
	// anything kept past that shows in the results.
	os.Setenv("DSH_ARENA_POISON", "1")
	goleak.VerifyTestMain(m)
}
