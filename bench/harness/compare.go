package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dshtrace/dshtrace/bench/internal/benchproc"
)

func compareCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	dshBin := fs.String("dsh", "", "otelcol-dsh-bench binary")
	filelogBin := fs.String("filelog", "", "otelcol-filelog-bench binary")
	corpus := fs.String("corpus", "", "corpus directory (bench/gen -out)")
	runs := fs.Int("runs", 3, "runs of each collector, alternating which goes first; medians reported")
	timeout := fs.Duration("timeout", 10*time.Minute, "limit of one collector run")
	batch := fs.Bool("batch", false, "a batch processor (defaults) in both logs pipelines")
	label := fs.String("label", "", "tag of the final ratio line, e.g. \"with batch\" (none: the exact line bench-quick ends with)")
	profile := fs.String("profile", "", "directory for a CPU profile of each otelcol-dsh-bench run (the pprof extension's save_to_file)")
	fs.Parse(args)
	for _, b := range []string{*dshBin, *filelogBin} {
		if err := check(b); err != nil {
			return err
		}
	}
	m, root, files, err := openCorpus(*corpus)
	if err != nil {
		return err
	}

	// Warm the page cache, so that every run reads from memory.
	if _, _, err := readAll(files); err != nil {
		return err
	}
	include := filepath.Join(root, "**", "session*.jsonl")
	dshRuns := 0
	dshCfg := func(statusFile string) string {
		cfg := dshConfig(include, statusFile, *batch)
		if *profile != "" {
			dshRuns++
			cfg = withProfile(cfg, filepath.Join(*profile, fmt.Sprintf("otelcol-dsh-bench-%d.prof", dshRuns)))
		}
		return cfg
	}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			return err
		}
	}
	filelogCfg := func(statusFile string) string { return filelogConfig(include, statusFile, *batch) }
	fmt.Printf("# batch processor in both logs pipelines: %v\n", *batch)

	var floors, dshs, filelogs []*result
	for r := 1; r <= *runs; r++ {
		fl, err := ioFloor(files, m.Rows)
		if err != nil {
			return err
		}
		floors = append(floors, fl)
		order := []string{"dsh", "filelog"}
		if r%2 == 0 {
			order = []string{"filelog", "dsh"}
		}
		for _, which := range order {
			var res *result
			if which == "dsh" {
				res, err = runCollector(ctx, "otelcol-dsh-bench", *dshBin, dshCfg, want{logs: m.Rows, spans: m.Spans}, *timeout, 0)
				dshs = append(dshs, res)
			} else {
				res, err = runCollector(ctx, "otelcol-filelog-bench", *filelogBin, filelogCfg, want{logs: m.Rows}, *timeout, 0)
				filelogs = append(filelogs, res)
			}
			if err != nil {
				return err
			}
			fmt.Printf("# run %d %-22s wall %7.3fs (first item %.3fs)  cpu %7.2fs  peak RSS %6.1f MiB (anon %5.1f)  %9.0f events/s  load %s\n",
				r, res.name, res.wall.Seconds(), res.firstItem.Seconds(), res.cpu.Seconds(), mib(res.peakRSS), mib(res.peakAnon),
				float64(m.Events)/res.wall.Seconds(), benchproc.LoadAvg())
		}
	}

	fl, dsh, filelog := median(floors), median(dshs), median(filelogs)
	fmt.Println()
	fmt.Printf("%-24s %10s %10s %12s %9s %9s %12s %12s\n", "system (median of runs)", "wall s", "events/s", "rows/s", "MiB/s", "CPU s", "CPU µs/event", "peak RSS MiB")
	for _, r := range []*result{fl, dsh, filelog} {
		rss := fmt.Sprintf("%12.1f", mib(r.peakRSS))
		if r.peakRSS == 0 {
			rss = fmt.Sprintf("%12s", "—")
		}
		fmt.Printf("%-24s %10.3f %10.0f %12.0f %9.1f %9.2f %12.2f %s\n", r.name, r.wall.Seconds(),
			float64(m.Events)/r.wall.Seconds(), float64(m.Rows)/r.wall.Seconds(),
			mib(m.Bytes)/r.wall.Seconds(), r.cpu.Seconds(), float64(r.cpu.Microseconds())/float64(m.Events), rss)
	}
	fmt.Println()
	fmt.Printf("dshtrace counted %d log records and %d spans (%d metric data points so far); filelog %d log records\n",
		dsh.logs, dsh.spans, dsh.points, filelog.logs)
	fmt.Printf("CPU-time ratio filelog/dshtrace: %.2f\n", filelog.cpu.Seconds()/dsh.cpu.Seconds())
	fmt.Printf("peak RSS ratio dshtrace/filelog: %.2f\n", float64(dsh.peakRSS)/float64(filelog.peakRSS))
	fmt.Printf("peak anonymous RSS (own memory, no executable pages) dshtrace %.1f MiB, filelog %.1f MiB, ratio %.2f\n",
		mib(dsh.peakAnon), mib(filelog.peakAnon), float64(dsh.peakAnon)/float64(filelog.peakAnon))
	best := func(rs []*result) time.Duration {
		b := rs[0].wall
		for _, r := range rs[1:] {
			b = min(b, r.wall)
		}
		return b
	}
	fmt.Printf("throughput ratio of the fastest runs dshtrace/filelog (least disturbed by other load): %.2f\n",
		best(filelogs).Seconds()/best(dshs).Seconds())
	floorRatio := dsh.wall.Seconds() / fl.wall.Seconds()
	verdict := "met"
	if floorRatio > 3 {
		verdict = "NOT met"
	}
	fmt.Printf("dshtrace wall / I/O floor wall: %.1f (goal <= 3: %s)\n", floorRatio, verdict)
	ratio := (float64(m.Events) / dsh.wall.Seconds()) / (float64(m.Events) / filelog.wall.Seconds())
	verdict = "met"
	if ratio < 1 {
		verdict = "NOT met"
	}
	fmt.Printf("goal (dshtrace/filelog >= 1.00): %s\n", verdict)
	if *label != "" {
		fmt.Printf("throughput ratio dshtrace/filelog (%s): %.2f\n", *label, ratio)
		return nil
	}
	fmt.Printf("throughput ratio dshtrace/filelog: %.2f\n", ratio)
	return nil
}

// median picks the run with the median wall time (runs keep their own CPU
// and RSS figures together).
func median(rs []*result) *result {
	s := append([]*result(nil), rs...)
	sort.Slice(s, func(i, j int) bool { return s[i].wall < s[j].wall })
	return s[(len(s)-1)/2]
}

// readAll reads every file once; it returns the bytes and lines read.
func readAll(files []string) (n, lines int64, err error) {
	buf := make([]byte, 1<<20)
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return n, lines, err
		}
		for {
			k, err := f.Read(buf)
			n += int64(k)
			lines += int64(bytes.Count(buf[:k], []byte{'\n'}))
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return n, lines, err
			}
		}
		f.Close()
	}
	return n, lines, nil
}

// ioFloor reads every file (1 MiB reads, newlines counted) in this process:
// what no reader of these files can beat on this machine.
func ioFloor(files []string, rows int64) (*result, error) {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	_, lines, err := readAll(files)
	wall := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err != nil {
		return nil, err
	}
	if lines != rows {
		return nil, fmt.Errorf("I/O floor read %d lines, the manifest says %d rows", lines, rows)
	}
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	return &result{name: "I/O floor (read files)", wall: wall, cpu: cpu, logs: lines}, nil
}

// dshConfig: the session_event file tailer → turn_state (traces, metrics)
// and the log records themselves → count.
func dshConfig(include, statusFile string, batch bool) string {
	return strings.NewReplacer("@INCLUDE@", include, "@STATUS@", statusFile, "@PROCESSORS@", processors(batch)).Replace(`receivers:
  session_event:
    files:
      include: ["@INCLUDE@"]
      start_at: beginning
      poll_interval: 200ms
connectors:
  turn_state:
exporters:
  count:
    status_file: "@STATUS@"
    interval: 50ms
processors:
  batch:
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [session_event]
      processors: [@PROCESSORS@]
      exporters: [turn_state, count]
    traces:
      receivers: [turn_state]
      exporters: [count]
    metrics:
      receivers: [turn_state]
      exporters: [count]
`)
}

// withProfile adds the pprof extension to a config, saving a CPU profile of
// the whole run (start to shutdown) to file.
func withProfile(cfg, file string) string {
	cfg = strings.Replace(cfg, "service:\n", "service:\n  extensions: [pprof]\n", 1)
	return "extensions:\n  pprof:\n    endpoint: localhost:0\n    save_to_file: \"" + file + "\"\n" + cfg
}

// filelogConfig: what a collector user would run instead — filelog with a
// json_parser on the same files → count. max_log_size as session_event's
// max_line_bytes, so no row is cut.
func filelogConfig(include, statusFile string, batch bool) string {
	return strings.NewReplacer("@INCLUDE@", include, "@STATUS@", statusFile, "@PROCESSORS@", processors(batch)).Replace(`receivers:
  filelog:
    include: ["@INCLUDE@"]
    start_at: beginning
    poll_interval: 200ms
    max_log_size: 4MiB
    operators:
      - type: json_parser
exporters:
  count:
    status_file: "@STATUS@"
    interval: 50ms
processors:
  batch:
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    logs:
      receivers: [filelog]
      processors: [@PROCESSORS@]
      exporters: [count]
`)
}

// processors is the logs pipelines' processor list.
func processors(batch bool) string {
	if batch {
		return "batch"
	}
	return ""
}
