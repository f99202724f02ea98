package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dshtrace/dshtrace/bench/internal/benchproc"
)

// scaleCmd runs otelcol-dsh-bench on each corpus in turn and prints its peak
// RSS once everything is counted: the memory a long session, or many open
// turns, cost the collector. Open turns stay open (dangling_timeout is far
// away), and the bounds on sessions and open turns are raised above the
// corpus so that nothing is evicted.
func scaleCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("scale", flag.ExitOnError)
	dshBin := fs.String("dsh", "", "otelcol-dsh-bench binary")
	label := fs.String("label", "sessions × turns", "title of the first column")
	timeout := fs.Duration("timeout", 15*time.Minute, "limit of one collector run")
	settle := fs.Duration("settle", time.Second, "wait after the last item before reading RSS")
	fs.Parse(args)
	if err := check(*dshBin); err != nil {
		return err
	}
	fmt.Printf("%-22s %10s %12s %10s %10s %9s %10s %13s %9s\n", *label, "events", "open turns", "MiB", "wall s", "CPU s", "events/s", "peak RSS MiB", "load")
	var prev *result
	var prevM *manifest
	for _, dir := range fs.Args() {
		m, err := readManifest(dir)
		if err != nil {
			return err
		}
		root, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		include := filepath.Join(root, "**", "session*.jsonl")
		cfg := func(statusFile string) string { return scaleConfig(include, statusFile) }
		r, err := runCollector(ctx, filepath.Base(root), *dshBin, cfg, want{logs: m.Rows, spans: m.Spans}, *timeout, *settle)
		if err != nil {
			return err
		}
		fmt.Printf("%-22s %10d %12d %10.1f %10.2f %9.2f %10.0f %13.1f %9s\n", shape(m), m.Events, m.OpenTurns,
			mib(m.Bytes), r.wall.Seconds(), r.cpu.Seconds(), float64(m.Events)/r.wall.Seconds(), mib(r.peakRSS), benchproc.LoadAvg())
		if prev != nil && m.OpenTurns > prevM.OpenTurns {
			fmt.Printf("%-22s RSS per additional open turn: %.0f bytes\n", "",
				float64(r.peakRSS-prev.peakRSS)/float64(m.OpenTurns-prevM.OpenTurns))
		}
		prev, prevM = r, m
	}
	return nil
}

func scaleConfig(include, statusFile string) string {
	return fmt.Sprintf(`receivers:
  session_event:
    files:
      include: [%q]
      start_at: beginning
      poll_interval: 200ms
connectors:
  turn_state:
    max_open_turns: 1000000
    max_sessions: 1000000
    dangling_timeout: 1h
exporters:
  count:
    status_file: %q
    interval: 50ms
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [session_event]
      exporters: [turn_state, count]
    traces:
      receivers: [turn_state]
      exporters: [count]
    metrics:
      receivers: [turn_state]
      exporters: [count]
`, include, statusFile)
}

// shape names a corpus by its sessions and turns, e.g. "1 × 45455 turns".
func shape(m *manifest) string {
	var p struct {
		Sessions int `json:"sessions"`
		Turns    int `json:"turns"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return "?"
	}
	return fmt.Sprintf("%d × %d turns", p.Sessions, p.Turns)
}
