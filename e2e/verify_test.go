//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// waitRows waits until every row of want ("session/seq" keys) reached the
// sink, failing the test after timeout or when a process in procs exits.
func waitRows(t *testing.T, sink *otlpSink, want map[string]bool, timeout time.Duration, procs ...*process) {
	t.Helper()
	poll(t, "every row at the sink", timeout, func() error {
		seen := sink.rowCounts()
		missing := 0
		for k := range want {
			if seen[k] == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d rows not at the sink yet", missing, len(want))
		}
		return nil
	}, procs...)
}

// rowCount is what the sink holds against what was written: rows lost,
// deliveries repeated (and the most of one row), rows never written, and
// the runs of consecutive rows of one session delivered again (in all, and
// the most in one session): each is one delivery repeated, or part of one.
type rowCount struct {
	lost, repeated, most, unexpected int
	runs, worstRuns                  int
	unexpectedKeys                   []string
}

func countRows(sink *otlpSink, f *fleet, want map[string]bool) rowCount {
	seen := sink.rowCounts()
	var c rowCount
	for k := range want {
		if seen[k] == 0 {
			c.lost++
		}
	}
	for k, n := range seen {
		if !want[k] {
			c.unexpected++
			c.unexpectedKeys = append(c.unexpectedKeys, k)
			continue
		}
		c.repeated += n - 1
		c.most = max(c.most, n)
	}
	sort.Strings(c.unexpectedKeys)
	for _, s := range f.agents {
		in, runs := false, 0
		for seq := -1; seq < s.gen.seq; seq++ {
			key := s.id + "/" + strconv.Itoa(seq)
			if seq < 0 {
				key = s.id + "/header"
			}
			dup := seen[key] > 1
			if dup && !in {
				runs++
			}
			in = dup
		}
		c.runs += runs
		c.worstRuns = max(c.worstRuns, runs)
	}
	return c
}

// turnCheck is how the turns expected stand in Jaeger: one line per turn
// that is not exactly its spans, once each; absentOnly when every problem
// is spans absent (none wrong, none stored twice); dangling counts the
// expected turns that are dangling.
type turnCheck struct {
	problems   []string
	absentOnly bool
	dangling   int
}

// checkTurns compares every expected turn with what Jaeger (query, its
// query API base) holds: exactly one turn span and exactly the turn's
// spans (compareTrace), and, with once, through the raw API that does not
// fold identical spans, no span stored twice. A turn is given up to a
// minute to arrive, and a few seconds once problems were found.
func checkTurns(ctx context.Context, query string, turns []*turnengine.Turn, once bool) turnCheck {
	c := turnCheck{absentOnly: true}
	for _, turn := range turns {
		if turn.Dangling() {
			c.dangling++
		}
		wait := 60 * time.Second
		if len(c.problems) > 0 {
			wait = 3 * time.Second
		}
		problem, absent := checkTurn(ctx, query, turn, wait, once)
		if problem != "" {
			c.problems = append(c.problems, problem)
			c.absentOnly = c.absentOnly && absent
		}
	}
	sort.Strings(c.problems)
	return c
}

// checkTurn checks one turn, waiting up to wait for it to be complete; it
// returns the problem ("" for none) and whether it is of spans absent.
func checkTurn(ctx context.Context, query string, turn *turnengine.Turn, wait time.Duration, once bool) (problem string, absent bool) {
	want := traceOf(turn)
	id := turnrender.TraceID(turn.SessionID, turn.Number)
	var got int
	var diffs []string
	for deadline := time.Now().Add(wait); ; {
		td, err := jaegerTrace(ctx, query, id)
		if err == nil {
			got, _ = turnSpans(td)
			diffs = compareTrace(want, td)
			if len(diffs) == 0 && got == 1 {
				break
			}
		} else {
			diffs = []string{err.Error()}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	raw := 0
	if rtd, err := jaegerRawTrace(ctx, query, id); err == nil {
		raw = rtd.SpanCount()
	}
	name := fmt.Sprintf("%s turn %d", turn.SessionID, turn.Number)
	switch {
	case got != 1:
		problem = fmt.Sprintf("%s: %d turn spans, want 1 (%v)", name, got, diffs)
	case len(diffs) > 0:
		problem = fmt.Sprintf("%s: %s", name, strings.Join(diffs, "; "))
	case once && raw != want.SpanCount():
		return fmt.Sprintf("%s: Jaeger stored %d spans, want %d: spans emitted twice", name, raw, want.SpanCount()), false
	default:
		return "", true
	}
	return problem, got <= 1 && raw <= want.SpanCount() && absentOnly(diffs)
}

// queueLosses counts, per exporter, the requests the collector's
// persistent queue reported lost at a restart ("Failed retrieving item"):
// the queue, starting after a stop that caught requests in flight, deletes
// them from storage and only then writes them back one by one, and a kill
// in between loses them (docs/operating.md, "Restarts and crashes").
func queueLosses(runs []*process, exporters ...string) map[string]int {
	lost := map[string]int{}
	for _, p := range runs {
		for _, l := range strings.Split(p.output(), "\n") {
			if !strings.Contains(l, "Failed retrieving item") {
				continue
			}
			for _, exp := range exporters {
				if strings.Contains(l, `"otelcol.component.id": "`+exp+`"`) {
					lost[exp]++
				}
			}
		}
	}
	return lost
}

// noPanic fails the test for every process whose log shows a panic.
func noPanic(t *testing.T, procs []*process) {
	t.Helper()
	for _, p := range procs {
		if strings.Contains(p.output(), "panic:") {
			errorf(t, "%s panicked:\n%s", p.name, p.tail(60))
		}
	}
}

// report lists problems through logf, at most 40 of them.
func report(logf func(string, ...any), problems []string) {
	for i, p := range problems {
		if i == 40 {
			logf("... and %d more", len(problems)-40)
			return
		}
		logf("%s", p)
	}
}
