package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/bench/internal/benchproc"
	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// samplingCmd runs otelcol-dsh-bench on one corpus with turn_state's
// sampling at session_ratio 1 (everything kept) and at -ratio, alternating
// which goes first each round, with compare's pipeline otherwise. A run at
// -ratio ends when exactly the spans the sampler keeps are counted: the
// harness replays the corpus through the turn engine beforehand (the
// connector's engine defaults, live steps on) and adds up the spans of the
// turns sampling.Decide keeps, with their live step fragments — a turn's
// fragments go out exactly when the turn does. A collector that exports
// another number of spans fails the run: that is the correctness check.
func samplingCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sampling", flag.ExitOnError)
	dshBin := fs.String("dsh", "", "otelcol-dsh-bench binary")
	corpus := fs.String("corpus", "", "corpus directory (bench/gen -out)")
	runs := fs.Int("runs", 3, "runs at each ratio, alternating which goes first; medians reported")
	ratio := fs.Float64("ratio", 0.1, "turn_state::sampling::session_ratio measured against 1")
	timeout := fs.Duration("timeout", 10*time.Minute, "limit of one collector run")
	fs.Parse(args)
	if err := check(*dshBin); err != nil {
		return err
	}
	if !(*ratio >= 0 && *ratio < 1) {
		return fmt.Errorf("-ratio %v: want 0 <= ratio < 1 (it is measured against 1)", *ratio)
	}
	cfg := sampling.Defaults()
	cfg.SessionRatio = *ratio
	if err := cfg.Validate(); err != nil {
		return err
	}
	m, root, files, err := openCorpus(*corpus)
	if err != nil {
		return err
	}

	start := time.Now()
	exp, err := expectSampled(files, sampling.New(cfg))
	if err != nil {
		return err
	}
	if exp.all != m.Spans {
		return fmt.Errorf("the turn engine renders %d spans of the corpus, the manifest says %d", exp.all, m.Spans)
	}
	if exp.heldBound > int64(cfg.MaxHeldSpans) {
		return fmt.Errorf("up to %d live step spans would be held back, over max_held_spans %d: the turns kept would go out without some of them",
			exp.heldBound, cfg.MaxHeldSpans)
	}
	if exp.open > 0 {
		return fmt.Errorf("%d turns of the corpus do not close: the expected spans would depend on when the collector closes them", exp.open)
	}
	rs := fmt.Sprint(*ratio)
	fmt.Printf("# expected at ratio %s (the corpus replayed through the turn engine, %.1fs): sessions kept %d of %d; turns kept %d of %d %v; spans %d of %d\n",
		rs, time.Since(start).Seconds(), exp.sessionsKept, exp.sessions, exp.turnsKept, exp.turns, exp.reasonString(), exp.kept, exp.all)
	fmt.Printf("# live step spans held back for the open turns of the %d sessions not kept: at most %d at once, %.0f KiB of heap\n",
		exp.sessions-exp.sessionsKept, exp.heldBound, float64(exp.heldHeap)/1024)

	if _, _, err := readAll(files); err != nil { // warm the page cache
		return err
	}
	include := filepath.Join(root, "**", "session*.jsonl")
	withRatio := func(r float64) func(string) string {
		return func(statusFile string) string { return samplingConfig(include, statusFile, r) }
	}
	names := map[bool]string{false: "ratio 1", true: "ratio " + rs}
	var full, sampled []*result
	for r := 1; r <= *runs; r++ {
		order := []bool{false, true}
		if r%2 == 0 {
			order = []bool{true, false}
		}
		for _, isSampled := range order {
			var res *result
			if isSampled {
				res, err = runCollector(ctx, names[true], *dshBin, withRatio(*ratio), want{logs: m.Rows, spans: exp.kept}, *timeout, 0)
				sampled = append(sampled, res)
			} else {
				res, err = runCollector(ctx, names[false], *dshBin, withRatio(1), want{logs: m.Rows, spans: m.Spans}, *timeout, 0)
				full = append(full, res)
			}
			if err != nil {
				return err
			}
			fmt.Printf("# run %d %-10s spans %6d  wall %7.3fs  cpu %6.2fs  %6.2f µs/event  peak RSS %6.1f MiB (anon %5.1f)  %8.0f events/s  load %s\n",
				r, res.name, res.spans, res.wall.Seconds(), res.cpu.Seconds(), perEvent(res, m),
				mib(res.peakRSS), mib(res.peakAnon), float64(m.Events)/res.wall.Seconds(), benchproc.LoadAvg())
		}
	}

	one, x := columnMedian(full), columnMedian(sampled)
	fmt.Println()
	fmt.Printf("%-22s %14s %9s %10s %8s %13s %13s %13s\n", "turn_state (medians)", "spans exported", "wall s", "events/s", "CPU s", "CPU µs/event", "peak RSS MiB", "anon RSS MiB")
	for _, r := range []*result{one, x} {
		fmt.Printf("%-22s %14d %9.3f %10.0f %8.2f %13.2f %13.1f %13.1f\n", r.name, r.spans, r.wall.Seconds(),
			float64(m.Events)/r.wall.Seconds(), r.cpu.Seconds(), perEvent(r, m), mib(r.peakRSS), mib(r.peakAnon))
	}
	fmt.Println()
	fmt.Printf("every run counted all %d log records and exactly the spans expected at its ratio\n", m.Rows)
	fmt.Printf("spans exported ratio %s / 1: %.2f\n", rs, float64(x.spans)/float64(one.spans))
	fmt.Printf("CPU per event ratio %s / 1: %.2f\n", rs, x.cpu.Seconds()/one.cpu.Seconds())
	fmt.Printf("peak anon RSS ratio %s / 1: %.2f\n", rs, float64(x.peakAnon)/float64(one.peakAnon))
	fmt.Printf("peak RSS ratio %s / 1: %.2f\n", rs, float64(x.peakRSS)/float64(one.peakRSS))
	return nil
}

// columnMedian is a result whose every figure is the median of the runs'
// (compare's median keeps the run of the median wall time whole; here the
// two ratios are compared figure by figure, and one run that other work
// on the machine disturbed moves none of them).
func columnMedian(rs []*result) *result {
	mid := func(v func(*result) int64) int64 {
		s := make([]int64, len(rs))
		for i, r := range rs {
			s[i] = v(r)
		}
		slices.Sort(s)
		return s[(len(s)-1)/2]
	}
	return &result{
		name:     rs[0].name,
		wall:     time.Duration(mid(func(r *result) int64 { return int64(r.wall) })),
		cpu:      time.Duration(mid(func(r *result) int64 { return int64(r.cpu) })),
		peakRSS:  mid(func(r *result) int64 { return r.peakRSS }),
		peakAnon: mid(func(r *result) int64 { return r.peakAnon }),
		logs:     mid(func(r *result) int64 { return r.logs }),
		spans:    mid(func(r *result) int64 { return r.spans }),
	}
}

func perEvent(r *result, m *manifest) float64 {
	return float64(r.cpu.Microseconds()) / float64(m.Events)
}

// expected is what sampling keeps of a corpus.
type expected struct {
	all, kept              int64 // spans
	turns, turnsKept, open int64
	sessions, sessionsKept int
	reasons                map[string]int64 // closed turns by the sampler's reason
	// heldBound bounds the live step spans the connector holds back at
	// once: each session not kept holds one open turn's at most, so the
	// sum over those sessions of their largest turn's fragments.
	heldBound int64
	// heldHeap is the heap those fragments take, measured here (the open
	// turns they point to left out: the engine holds those anyway).
	heldHeap int64
}

func (e *expected) reasonString() string {
	var parts []string
	for _, r := range sampling.Reasons {
		if n := e.reasons[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// expectSampled replays each file through a turn engine configured as
// turn_state's defaults configure it (live steps on; the other settings
// the engine's defaults, which are the connector's) and counts the spans
// the sampler keeps. The session key is the header's id, as the file
// tailer's records name it (no client). A closed turn's spans are kept
// when Decide keeps it; its live step fragments go out with it — at once
// when its session is kept, held back and then sent with the turn when
// only the turn is kept — so they count exactly when the turn does.
func expectSampled(files []string, s *sampling.Sampler) (*expected, error) {
	e := &expected{reasons: map[string]int64{}}
	type turnKey struct {
		session string
		number  int64
	}
	sessions := map[string]bool{}
	largest := map[string]int64{}                   // a session's largest turn's fragment spans
	largestFrags := map[string][]*turnengine.Turn{} // and the fragments themselves
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		eng := turnengine.New(turnengine.Config{LiveSteps: true})
		err = turnengine.Replay(eng, f, sessionlog.Options{}, name, time.Now())
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		frags := map[turnKey]int64{}
		fragTurns := map[turnKey][]*turnengine.Turn{}
		for _, t := range eng.Drain() {
			n := int64(turnrender.SpanCount(t))
			e.all += n
			sessions[t.SessionID] = s.SessionKept(t.SessionID)
			k := turnKey{t.SessionID, t.Number}
			switch {
			case t.Fragment:
				frags[k] += n
				fragTurns[k] = append(fragTurns[k], t)
				continue
			case t.Late != nil:
				e.kept += n // a late close is always kept
				continue
			case t.Dangling():
				e.open++
			}
			e.turns++
			if frags[k] > largest[t.SessionID] {
				largest[t.SessionID] = frags[k]
				largestFrags[t.SessionID] = fragTurns[k]
			}
			d := s.Decide(t)
			e.reasons[d.Reason]++
			if d.Keep {
				e.turnsKept++
				e.kept += n + frags[k]
			}
			delete(frags, k)
			delete(fragTurns, k)
		}
		if len(frags) > 0 {
			return nil, fmt.Errorf("%s: live steps of %d turns that never closed", name, len(frags))
		}
	}
	e.sessions = len(sessions)
	for _, kept := range sessions {
		if kept {
			e.sessionsKept++
		}
	}
	var held [][]*turnengine.Turn
	for session, n := range largest {
		if !sessions[session] {
			e.heldBound += n
			held = append(held, largestFrags[session])
		}
	}
	clear(largestFrags)
	e.heldHeap = heapOf(held)
	return e, nil
}

// heapOf measures the heap that the fragments alone take: the live heap
// with them, less the live heap once they are let go of.
func heapOf(held [][]*turnengine.Turn) int64 {
	for _, fs := range held {
		for _, f := range fs {
			f.Of = nil // the open turn: not the held steps' cost
		}
	}
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(held) // and no longer
	runtime.GC()
	runtime.ReadMemStats(&without)
	return int64(with.HeapAlloc) - int64(without.HeapAlloc)
}

// samplingConfig is compare's otelcol-dsh-bench pipeline (no processor)
// with turn_state::sampling::session_ratio set.
func samplingConfig(include, statusFile string, ratio float64) string {
	cfg := dshConfig(include, statusFile, false)
	const conn = "connectors:\n  turn_state:\n"
	if !strings.Contains(cfg, conn) {
		panic("dshConfig: no turn_state connector to configure")
	}
	return strings.Replace(cfg, conn, conn+"    sampling:\n      session_ratio: "+strconv.FormatFloat(ratio, 'g', -1, 64)+"\n", 1)
}
