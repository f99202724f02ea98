package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
)

// TestServePeakMemory runs the built dshtrace serve against long sessions
// with many clients at once and bounds its peak resident memory (VmHWM):
// the pages' budget and the runtime's overhead, however many ask. The
// bound is generous; bench/serve.sh records the figures.
func TestServePeakMemory(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds the binary and long sessions; Linux's /proc")
	}
	const sessions, clientsEach, turns, budgetMiB, boundMiB = 4, 4, 4000, 192, 1024
	dir := t.TempDir()
	bin := filepath.Join(dir, "dshtrace")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	must(t, build.Run())
	root := filepath.Join(dir, "root")
	for i := range sessions {
		id := fmt.Sprintf("long-%d", i)
		put(t, root, id, "session.v4.jsonl", []byte(testlog.Synth(id, turns, 3, false)))
	}
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--max-page-memory", strconv.Itoa(budgetMiB), root)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	must(t, err)
	url := regexp.MustCompile(`http://\S+/`).FindString(line)
	if url == "" {
		t.Fatalf("serve said %q", line)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	busy := 0
	for i := range sessions * clientsEach {
		wg.Go(func() {
			for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
				resp, err := http.Get(fmt.Sprintf("%ss/long-%d", url, i%sessions))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					t.Errorf("GET: %d", resp.StatusCode)
					return
				}
				mu.Lock()
				busy++
				mu.Unlock()
				time.Sleep(200 * time.Millisecond) // the budget is taken: as Retry-After says, a moment
			}
			t.Errorf("client %d: no page within 5 minutes", i)
		})
	}
	wg.Wait()
	hwm := vmHWM(t, cmd.Process.Pid)
	t.Logf("%d sessions of %d turns, %d clients each, --max-page-memory %d: peak RSS %d MiB in %s (%d answers busy)",
		sessions, turns, clientsEach, budgetMiB, hwm>>20, time.Since(start).Round(time.Millisecond), busy)
	if hwm > boundMiB<<20 {
		t.Errorf("peak RSS %d MiB, over %d MiB", hwm>>20, boundMiB)
	}
}

// vmHWM is a process's peak resident memory, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}
