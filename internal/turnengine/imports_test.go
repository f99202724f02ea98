package turnengine

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The engine is the state machine only: neither it nor anything it
// imports is a collector package — pdata included; rendering lives in
// internal/turnrender.
func TestImportsNoCollectorPackage(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 2 || deps[len(deps)-1] != "github.com/dshtrace/dshtrace/internal/turnengine" {
		t.Fatalf("go list -deps listed %d packages, not ending with the engine: %q", len(deps), deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "go.opentelemetry.io/") || strings.Contains(d, "pdata") {
			t.Errorf("the engine depends on %s", d)
		}
	}
}
