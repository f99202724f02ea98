package httpsource

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Admission control. A request is read and judged whole before anything
// of it is delivered, and its decoded rows cost a few times its
// decompressed size (docs/operating.md, "Memory under load, slow and
// hostile clients"), so the bytes of all request bodies being read at once
// are bounded: each request takes its share of max_bytes_in_flight as its
// decompressed body is read (and its zstd decoder's window once the frame
// header names it) and gives it back once it is answered. A request that would take the bytes in flight past the bound
// is refused with 503 and Retry-After, as the pipeline's own refusals are:
// nothing of it is kept, the client sends it again later.

// DefaultMaxBytesInFlight is max_bytes_in_flight's default: a request of
// the default max_request_body_size (20 MiB) with its zstd window and
// another of that size, or thousands of small live posts, read at once.
const DefaultMaxBytesInFlight = 64 << 20

// admissionStep is how much more a request takes each time its body
// outgrows what it holds, so the shared counter is touched once per 64 KiB
// read, not per read.
const admissionStep = 64 << 10

// errOverCapacity: reading a body would take the bytes in flight past
// max_bytes_in_flight.
var errOverCapacity = errors.New("max_bytes_in_flight reached")

// admission counts the decompressed request-body bytes being read and
// judged at once against their limit.
type admission struct {
	limit int64
	inUse atomic.Int64
	// since counts the bytes taken since memory was last given back to the
	// operating system.
	since atomic.Int64
	// idle asks the release loop to give memory back (buffered: one
	// request waits at most); stop ends the loop.
	idle chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

// newAdmission returns the admission control of limit bytes in flight,
// its release loop running until shutdown.
func newAdmission(limit int64) *admission {
	a := &admission{limit: limit, idle: make(chan struct{}, 1), stop: make(chan struct{})}
	a.wg.Go(a.releaseLoop)
	return a
}

// shutdown ends the release loop.
func (a *admission) shutdown() {
	close(a.stop)
	a.wg.Wait()
}

// take reserves n bytes; false, and nothing reserved, when they would take
// the bytes in flight past the limit.
func (a *admission) take(n int64) bool {
	for {
		cur := a.inUse.Load()
		if cur+n > a.limit {
			return false
		}
		if a.inUse.CompareAndSwap(cur, cur+n) {
			a.since.Add(n)
			return true
		}
	}
}

// give returns n bytes taken before. When no body is being read any more
// and the bodies read since memory was last given back amount to more
// than the limit, the heap they left behind is garbage worth returning to
// the operating system: the release loop is asked to.
func (a *admission) give(n int64) {
	if a.inUse.Add(-n) == 0 && a.since.Load() > a.limit {
		select {
		case a.idle <- struct{}{}:
		default: // a release is asked for already
		}
	}
}

// releaseLoop returns the heap the decoded requests left behind to the
// operating system when asked. Without it the garbage of a burst of large
// requests stays resident until the runtime's next collection, which an
// idle process only forces every two minutes, and the heap goal set at
// the burst's peak keeps the pages mapped after it.
func (a *admission) releaseLoop() {
	for {
		select {
		case <-a.stop:
			return
		case <-a.idle:
			if a.inUse.Load() == 0 { // not while a new burst is read
				a.since.Store(0)
				debug.FreeOSMemory()
			}
		}
	}
}

// ticket is one request's share of the bytes in flight.
type ticket struct {
	a    *admission
	held int64
}

// admit lets a request start reading its body: nil when the bytes in
// flight are at their limit already. Its share grows with what it reads,
// not with the Content-Length it declares: a client that declares a large
// body and sends it slowly (or never) holds only what it sent, until
// read_timeout cuts it off.
func (a *admission) admit() *ticket {
	if a.inUse.Load() >= a.limit {
		return nil
	}
	return &ticket{a: a}
}

// done gives the request's share back.
func (t *ticket) done() {
	t.a.give(t.held)
	t.held = 0
}

// reader is r (a request's decompressed body) taking the bytes it reads
// from the ticket's admission as it goes: errOverCapacity once they would
// pass the limit.
func (t *ticket) reader(r io.Reader) io.Reader { return &admittedReader{r: r, t: t} }

type admittedReader struct {
	r    io.Reader
	t    *ticket
	read int64
}

func (ar *admittedReader) Read(p []byte) (int, error) {
	n, err := ar.r.Read(p)
	ar.read += int64(n)
	if over := ar.read - ar.t.held; over > 0 {
		more := max(over, admissionStep)
		if !ar.t.a.take(more) {
			if !ar.t.a.take(over) {
				return 0, errOverCapacity
			}
			more = over
		}
		ar.t.held += more
	}
	return n, err
}

// overCapacity is what the client is told when the bytes in flight are at
// their limit: 503, retry the same request.
func overCapacity(limit int64) *reqError {
	return &reqError{status: http.StatusServiceUnavailable, seq: -1, reason: "bytes_in_flight",
		msg: fmt.Sprintf("the receiver is reading its limit of request bodies at once (max_bytes_in_flight %d bytes, decompressed), retry later", limit)}
}
