package sessionlog

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: the
// zstd decoder is the one thing here that could start some.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
