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
	"sync"
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
// stop (SIGTERM, then SIGQUIT after 10s: stop) with t.Cleanup. The child runs in its
// own process group and, on Linux, dies with the test binary (procAttr).
func start(t *testing.T, dir, name, bin string, env []string, args ...string) *process {
	t.Helper()
	return startAs(t, dir, name, bin, env, nil, args...)
}

// startAs is start with the child running as user cred (nil: as the test).
func startAs(t *testing.T, dir, name, bin string, env []string, cred *syscall.Credential, args ...string) *process {
	t.Helper()
	summarize(t)
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = procAttr()
	cmd.SysProcAttr.Credential = cred
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
			errorf(t, "%s: %v", name, err)
		}
		if t.Failed() {
			t.Logf("---- %s log (last 60 lines) ----\n%s", name, p.tail(60))
		}
	})
	return p
}

// stop sends SIGTERM and waits; a process that does not exit in time gets
// SIGQUIT (a Go process then prints its goroutines and exits), and its
// process group SIGKILL 5s later if it is still there. Stopping twice is
// harmless.
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
		// SIGQUIT first: a Go process writes every goroutine's stack to
		// its log and exits, which shows where it was stuck.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		dump := p.goroutines()
		return fmt.Errorf("did not exit within %v of SIGTERM; killed (SIGQUIT); the goroutines it was waiting in:\n%s", grace, stuck(dump))
	}
}

// goroutines is the SIGQUIT goroutine dump at the end of the process's log
// ("" when there is none).
func (p *process) goroutines() string {
	out := p.output()
	if i := strings.Index(out, "\ngoroutine "); i >= 0 {
		return out[i+1:]
	}
	return ""
}

// stuck is the part of a SIGQUIT goroutine dump that
// shows what a shutdown waits for: the goroutines with dshtrace's, the
// collector's service or a Kafka client's frames (others are listed by
// their first line only).
func stuck(dump string) string {
	if dump == "" {
		return "(no goroutine dump in the log)"
	}
	var keep, other []string
	for _, g := range strings.Split(dump, "\n\n") {
		first, _, _ := strings.Cut(g, "\n")
		if !strings.HasPrefix(first, "goroutine ") {
			continue
		}
		if strings.Contains(g, "dshtrace") || strings.Contains(g, "franz-go") ||
			strings.Contains(g, "collector/service") || strings.Contains(g, "kafkareceiver") {
			keep = append(keep, g)
		} else {
			other = append(other, first)
		}
	}
	return strings.Join(keep, "\n\n") + fmt.Sprintf("\n\n(%d other goroutines)", len(other))
}

// failed keeps the failures reported through errorf and fatalf, per test,
// to be repeated by summarize's cleanup.
var failed sync.Map // *testing.T → *failures

type failures struct {
	mu   sync.Mutex
	msgs []string
}

// summarize makes the test, if it fails, end its output with its failures
// again, after the process logs its cleanups print: a CI log is read from
// its end. The first start of a test registers it, so it runs last.
func summarize(t *testing.T) {
	if _, loaded := failed.LoadOrStore(t, &failures{}); loaded {
		return
	}
	t.Cleanup(func() {
		v, _ := failed.LoadAndDelete(t)
		if !t.Failed() {
			return
		}
		f := v.(*failures)
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.msgs) == 0 {
			t.Logf("---- %s failed: the failures are above the process logs ----", t.Name())
			return
		}
		msgs := f.msgs
		if len(msgs) > 12 {
			msgs = append(msgs[:12:12], fmt.Sprintf("... and %d more", len(f.msgs)-12))
		}
		for i, m := range msgs {
			if len(m) > 2000 {
				msgs[i] = m[:2000] + " ..."
			}
		}
		t.Logf("---- %s failed (%d failures; again, after the process logs) ----\n%s", t.Name(), len(f.msgs), strings.Join(msgs, "\n"))
	})
}

// errorf is t.Errorf, the message kept for summarize.
func errorf(t *testing.T, format string, args ...any) {
	t.Helper()
	note(t, format, args...)
	t.Errorf(format, args...)
}

// fatalf is t.Fatalf, the message kept for summarize.
func fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	note(t, format, args...)
	t.Fatalf(format, args...)
}

func note(t *testing.T, format string, args ...any) {
	if v, ok := failed.Load(t); ok {
		f := v.(*failures)
		f.mu.Lock()
		f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
		f.mu.Unlock()
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
				fatalf(t, "%s: %s exited (%v) while waiting; log:\n%s", what, p.name, perr, p.tail(40))
			}
		}
		if time.Now().After(deadline) {
			fatalf(t, "%s: not reached within %v: %v", what, timeout, err)
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
