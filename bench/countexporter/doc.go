// Package countexporter is the `count` exporter of the benchmark
// distributions (bench/): it accepts logs, traces and metrics, counts log
// records, spans and metric data points, and drops them.
//
// It exists so that a benchmark can tell when a collector has delivered
// everything it was fed without measuring a real exporter. With
// status_file set, the counts and the wall times of the first and last
// item are written as one JSON object (Status) to that file — atomically,
// through a rename — at most every interval while items arrive, and once
// more at shutdown. All signals of one component ID share one set of
// counters and one file.
//
//	exporters:
//	  count:
//	    status_file: /tmp/bench/status.json
//	    interval: 100ms
//
// It is not part of the otelcol-dsh distribution.
package countexporter
