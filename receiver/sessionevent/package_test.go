package sessionevent

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// Re-executed by TestFilesSIGKILL as the collector to kill.
		os.Exit(runChild())
	}
	goleak.VerifyTestMain(m)
}
