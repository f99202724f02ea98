//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDefaultConfigPortInUse: otelcol-dsh on its built-in configuration, one
// of whose addresses is taken, exits at once with one line that names the
// address, what it serves and the variable that moves it — for each of the
// three addresses in turn (moved to free ports so the test needs none of
// the defaults).
func TestDefaultConfigPortInUse(t *testing.T) {
	bin := lookPath(t, "OTELCOL_DSH", toolsHint)
	vars := []string{"OTELCOL_DSH_HTTP_ENDPOINT", "OTELCOL_DSH_METRICS_ENDPOINT", "OTELCOL_DSH_TELEMETRY_ENDPOINT"}
	for taken, name := range vars {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"HOME=" + dir, "DSH_HOME=" + filepath.Join(dir, "dsh"), "XDG_STATE_HOME=" + filepath.Join(dir, "state"), "PATH=/usr/bin:/bin"}
			var busy string
			for i, v := range vars {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				addr := l.Addr().String()
				if i == taken {
					busy = addr
					defer l.Close()
				} else {
					l.Close()
				}
				env = append(env, v+"="+addr)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("still running after 30s with %s taken; stderr:\n%s", busy, stderr.String())
			}
			if err == nil {
				t.Fatalf("exited 0 with %s taken", busy)
			}
			out := strings.TrimRight(stderr.String(), "\n")
			if strings.Contains(out, "\n") || stdout.Len() != 0 {
				t.Fatalf("want one line, got stdout %q stderr %q", stdout.String(), stderr.String())
			}
			for _, want := range []string{"otelcol-dsh: ", busy + " is in use", name} {
				if !strings.Contains(out, want) {
					t.Errorf("%q lacks %q", out, want)
				}
			}
		})
	}
}
