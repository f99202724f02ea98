//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is a backend or the collector under test, started by the suite and
// stopped when the test ends, whatever happens.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs bin with args, its output in dir/<name>.log, and registers its
// stop (SIGTERM, then SIGKILL after 10s) with t.Cleanup. The child runs in its
// own process group and, on Linux, dies with the test binary (procAttr).
func start(t *testing.T, dir, name, bin string, env []string, args ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.stop(10 * time.Second); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if t.Failed() {
			t.Logf("---- %s log (last 60 lines) ----\n%s", name, p.tail(60))
		}
	})
	return p
}

// stop sends SIGTERM and waits; a process that does not exit in time is
// killed with its process group. Stopping twice is harmless.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("did not exit within %v of SIGTERM; killed", grace)
	}
}

// exited reports whether the process has ended (and how).
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

func (p *process) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

func (p *process) tail(n int) string {
	lines := strings.Split(strings.TrimRight(p.output(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// poll calls check every interval until it returns nil, and fails the test
// with the last error after timeout. A process in procs that exits meanwhile
// fails the test at once.
func poll(t *testing.T, what string, timeout time.Duration, check func() error, procs ...*process) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := 50 * time.Millisecond
	for {
		err := check()
		if err == nil {
			return
		}
		for _, p := range procs {
			if done, perr := p.exited(); done {
				t.Fatalf("%s: %s exited (%v) while waiting; log:\n%s", what, p.name, perr, p.tail(40))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v: %v", what, timeout, err)
		}
		time.Sleep(interval)
		if interval < 500*time.Millisecond {
			interval *= 2
		}
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

// get fetches url and returns the status and body.
func get(ctx context.Context, url string, header ...string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// httpOK is a poll check: url answers 2xx.
func httpOK(url string) func() error {
	return func() error {
		code, body, err := get(context.Background(), url)
		if err != nil {
			return err
		}
		if code/100 != 2 {
			return fmt.Errorf("GET %s: %d %s", url, code, bytes.TrimSpace(body))
		}
		return nil
	}
}

// httpAnswers is a poll check: something answers HTTP at url, whatever the
// status (a listener that is up).
func httpAnswers(url string) func() error {
	return func() error {
		_, _, err := get(context.Background(), url)
		return err
	}
}

// lookPath resolves the binary named by an environment variable.
func lookPath(t *testing.T, env, hint string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		t.Fatalf("%s is not set: %s", env, hint)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v (%s)", env, p, err, hint)
	}
	return p
}

var errEmpty = errors.New("empty result")

// requireFree fails the test at once when a loopback address it is about to
// use is taken (another e2e run, `make demo`, a developer's collector).
func requireFree(t *testing.T, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s is in use (is `make demo` or another e2e run active?): %v", a, err)
		}
		l.Close()
	}
}
