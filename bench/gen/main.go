// Command gen writes a synthetic dsh session root for the benchmarks: N
// sessions of T turns, each turn S steps, each step but the last a model
// call that asks for K tools and their results, the last step the answer;
// every model call streams a reasoning and a text block of C deltas each
// (the chunk density) and one tool-call block per tool. Sessions are dsh v0
// (top-level assistant/chunk events, runs of three or more deltas packed
// into text-chunks / reasoning-chunks / tool-call-chunks rows) or v4
// (streams embedded in assistant/message), and pass `dshtrace check` with
// no violation. The output is a function of the flags alone (-seed).
//
//	go run ./bench/gen -out /tmp/corpus -sessions 40 -turns 20 -steps 3 -tools 2 -chunks 20 -format mix
//
// Layout: <out>/--home-bench-proj--/<session-id>/session.jsonl (v0) or
// session.v4.jsonl (v4), as dsh writes them; with -wrapped, every session
// goes as stream-json lines ({"type":"session_event","sessionId",…,"event"})
// into one file <out>/sessions-wrapped.jsonl (v4 events, no header).
// <out>/manifest.json records the flags and the totals the benchmarks check
// against: files, rows (lines), logical events (packed rows expanded), bytes,
// turns closed and open, and the spans the closed turns make.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

// Params are the generator's inputs; they are also written to the manifest.
type Params struct {
	Sessions int    `json:"sessions"`
	Turns    int    `json:"turns"`
	Steps    int    `json:"steps"`
	Tools    int    `json:"tools"`
	Chunks   int    `json:"chunks"`
	Format   string `json:"format"` // v0, v4 or mix (even sessions v0, odd v4)
	Seed     uint64 `json:"seed"`
	OpenLast bool   `json:"open_last"` // the last turn of each session stays open
	Wrapped  bool   `json:"wrapped"`   // one file of stream-json lines
}

// Manifest describes what was written.
type Manifest struct {
	Params    Params `json:"params"`
	Files     int    `json:"files"`
	Rows      int64  `json:"rows"`   // physical lines, headers included
	Events    int64  `json:"events"` // logical events (dshtrace check's "events")
	Bytes     int64  `json:"bytes"`
	Turns     int64  `json:"turns"`      // closed by turn/end
	OpenTurns int64  `json:"open_turns"` // left open (-open-last)
	Spans     int64  `json:"spans"`      // spans of the closed turns
}

func main() {
	var p Params
	out := flag.String("out", "", "session root to write (created; must not hold a manifest.json unless -force)")
	force := flag.Bool("force", false, "write into an existing root, replacing what is there")
	flag.IntVar(&p.Sessions, "sessions", 10, "sessions (N)")
	flag.IntVar(&p.Turns, "turns", 10, "turns per session (T)")
	flag.IntVar(&p.Steps, "steps", 3, "steps per turn (S); steps before the last call tools")
	flag.IntVar(&p.Tools, "tools", 2, "tool calls per step before the last (K)")
	flag.IntVar(&p.Chunks, "chunks", 20, "stream deltas per reasoning and per text block (C, chunk density)")
	flag.StringVar(&p.Format, "format", "mix", "v0, v4 or mix")
	flag.Uint64Var(&p.Seed, "seed", 1, "random seed")
	flag.BoolVar(&p.OpenLast, "open-last", false, "leave each session's last turn open (a step with tool calls in flight)")
	flag.BoolVar(&p.Wrapped, "wrapped", false, "all sessions in one file of stream-json lines (v4 only)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "gen: -out is required")
		os.Exit(2)
	}
	m, err := Generate(*out, p, *force)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
}
