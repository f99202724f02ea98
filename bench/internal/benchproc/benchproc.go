// Package benchproc holds what the collector benchmarks of bench/ share:
// starting and stopping collector processes, reading their CPU time and
// peak RSS from /proc, free loopback ports, polling, scraping a metric from
// a collector's own telemetry, and a bench/gen corpus read as sessions and
// posted to the session_event receiver over HTTP.
package benchproc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// CPUTime is a process's user and system CPU time (/proc/PID/stat); 0 when
// it cannot be read.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// StatusKB reads a kB field (VmHWM, VmRSS, RssAnon) of /proc/PID/status; 0
// when it cannot be read.
func StatusKB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			if fs := strings.Fields(v); len(fs) > 0 {
				k, _ := strconv.ParseInt(fs[0], 10, 64)
				return k
			}
		}
	}
	return 0
}

// LoadAvg is the first three fields of /proc/loadavg.
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// FreePorts returns n distinct free TCP ports on 127.0.0.1.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// WaitFor calls fn every 100 ms until it returns nil, for at most d; an
// error made by Stop ends the wait at once.
func WaitFor(d time.Duration, what string, fn func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return nil
		}
		var s stopError
		if errors.As(err, &s) {
			return fmt.Errorf("%s: %w", what, s.error)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %s: %w", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop wraps an error that ends a WaitFor at once.
func Stop(err error) error { return stopError{err} }

type stopError struct{ error }

// HTTPOK is nil when a GET of url answers 200.
func HTTPOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// MetricRE matches the samples of one metric of a collector's own
// telemetry (Prometheus text; with or without the _total suffix), the
// value the first group.
func MetricRE(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:_total)?(?:\{[^}]*\})? (\S+)`)
}

// SumMetric sums the samples of one metric on a collector's telemetry
// endpoint host:port (0 when it cannot be read).
func SumMetric(addr string, re *regexp.Regexp) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, m := range re.FindAllSubmatch(b, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		sum += v
	}
	return sum
}

// Proc is a started process and the end of its Wait.
type Proc struct {
	Name string
	Log  string // the file its stdout and stderr go to
	cmd  *exec.Cmd
	done chan struct{}
}

// PID is the process's id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited is true once the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Spawn starts bin with args and env (added to this process's), its output
// in dir/name.log.
func Spawn(dir, name string, env []string, bin string, args ...string) (*Proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

// Stop sends SIGTERM and waits up to grace, then kills.
func (p *Proc) Stop(grace time.Duration) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// Tail is the last n lines of the process's log.
func (p *Proc) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Session is one session file of a bench/gen root, as rows.
type Session struct {
	ID   string
	Rows [][]byte // each with its newline
}

// ReadSessions reads every session file (*.jsonl) of a bench/gen root; the
// session id is its directory's name.
func ReadSessions(root string) ([]Session, error) {
	var out []Session
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := Session{ID: filepath.Base(filepath.Dir(path))}
		for _, l := range bytes.SplitAfter(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				s.Rows = append(s.Rows, l)
			}
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// PostAll posts every session's rows in order to the session_event
// receiver at addr (host:port), requests of rows rows to
// /v1/sessions/{id}/events, the sessions shared among workers; a request
// refused with 5xx (or not answered) is sent again. It returns the rows
// the receiver acknowledged as accepted and as duplicates.
func PostAll(addr string, sessions []Session, rows, workers int) (accepted, duplicates int64, err error) {
	work := make(chan Session)
	errs := make(chan error, workers)
	var mu sync.Mutex
	var wg sync.WaitGroup
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for range workers {
		wg.Go(func() {
			var a, d int64
			defer func() { mu.Lock(); accepted += a; duplicates += d; mu.Unlock() }()
			for s := range work {
				for i := 0; i < len(s.Rows); i += rows {
					ack, err := post(hc, addr, s.ID, bytes.Join(s.Rows[i:min(i+rows, len(s.Rows))], nil))
					if err != nil {
						errs <- err
						for range work {
						}
						return
					}
					a, d = a+ack.Accepted, d+ack.Duplicates
				}
			}
		})
	}
	for _, s := range sessions {
		work <- s
	}
	close(work)
	wg.Wait()
	close(errs)
	return accepted, duplicates, <-errs
}

// Ack is the body of the receiver's 202.
type Ack struct {
	Accepted   int64 `json:"accepted"`
	Duplicates int64 `json:"duplicates"`
}

func post(hc *http.Client, addr, id string, body []byte) (Ack, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := hc.Post("http://"+addr+"/v1/sessions/"+id+"/events", "application/x-ndjson", bytes.NewReader(body))
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				var a Ack
				if err := json.Unmarshal(b, &a); err != nil {
					return a, fmt.Errorf("POST %s: 202 with %q: %v", id, b, err)
				}
				return a, nil
			}
			if resp.StatusCode < 500 {
				return Ack{}, fmt.Errorf("POST %s: HTTP %d %s", id, resp.StatusCode, bytes.TrimSpace(b))
			}
		}
		if time.Now().After(deadline) {
			return Ack{}, fmt.Errorf("POST %s: not accepted in 2m (%v)", id, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
