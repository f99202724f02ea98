//go:build unix

package pipeline

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the process's user and system CPU time so far (0 if the
// system will not say).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Start is the moment and the process's CPU time a benchmark's timed part
// begins at, for ReportPerEvent.
func Start() (time.Time, time.Duration) { return time.Now(), CPUTime() }

// ReportPerEvent reports the events per second and the process's CPU time
// per event (as bench/harness reports it for a collector: steadier than
// wall time on a shared machine) of b.N passes over a corpus of m since
// Start.
func ReportPerEvent(b *testing.B, m Manifest, start time.Time, cpu0 time.Duration) {
	events := float64(m.Events) * float64(b.N)
	b.ReportMetric(events/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64((CPUTime()-cpu0).Microseconds())/events, "cpu-µs/event")
}
