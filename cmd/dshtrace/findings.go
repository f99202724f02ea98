package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// runFindings lists what went wrong in every turn of session logs or of
// every session under session roots, with the rules and thresholds the
// turn_state connector applies (internal/findings). Exit 1 when there is
// any finding, 0 when none, 2 on input it cannot read: so that it can gate
// a CI run over recorded sessions.
func runFindings(e *env, args []string) error {
	fs := newFlags("findings")
	asJSON := fs.Bool("json", false, "one JSON object per finding per line")
	def := findings.Defaults()
	cfg := def
	fs.IntVar(&cfg.LoopRepeats, "loop-repeats", def.LoopRepeats, "identical calls with identical results that make a tool_loop (`N`)")
	fs.IntVar(&cfg.ErrorStreak, "error-streak", def.ErrorStreak, "failed results in a row that make a tool_error_streak (`N`)")
	fs.IntVar(&cfg.Retries, "retries", def.Retries, "model-call retries in a turn that make model_retries (`N`)")
	fs.IntVar(&cfg.MaxSteps, "max-steps", 0, "a turn of more steps is over_steps (`N`; 0: off)")
	fs.Int64Var(&cfg.MaxTokens, "max-tokens", 0, "a turn of more tokens is over_tokens (`N`; 0: off)")
	fs.Float64Var(&cfg.MaxCost, "max-cost", 0, "a turn costing more (`USD`) is over_cost (0: off)")
	fs.DurationVar(&cfg.MaxDuration, "max-duration", 0, "a turn lasting longer (`D`, e.g. 10m) is over_duration (0: off)")
	session := sessionFlag(fs)
	paths, err := parseArgs(e, fs, args, someFiles)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	found, bad := 0, false
	for _, p := range paths {
		logs, err := logsOf(p)
		if err != nil {
			fmt.Fprintf(e.stderr, "dshtrace findings: %v\n", err)
			bad = true
			continue
		}
		for _, l := range logs {
			n, err := findingsOf(e, l, cfg, *session, *asJSON)
			found += n
			if err != nil {
				fmt.Fprintf(e.stderr, "dshtrace findings: %v\n", err)
				bad = true
			}
		}
	}
	switch {
	case bad:
		return &exitError{code: 2}
	case found > 0:
		if !*asJSON {
			fmt.Fprintf(e.stdout, "%s\n", plural(found, "finding"))
		}
		return &exitError{code: 1}
	}
	if !*asJSON {
		fmt.Fprintln(e.stdout, "no findings")
	}
	return nil
}

// sessionLog is one log to read: a file, and the client whose session
// root under an archive's @clients holds it ("" for none).
type sessionLog struct {
	path, client string
}

// logsOf is a FILE, or every session file under a ROOT (a directory).
func logsOf(p string) ([]sessionLog, error) {
	fi, err := os.Stat(p)
	if p == "-" || (err == nil && !fi.IsDir()) {
		return []sessionLog{{path: p}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, unwrapPath(err))
	}
	list, err := sessionroot.List(p)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: no session under this root (%s)", p, describeRoot(p))
	}
	out := make([]sessionLog, 0, len(list))
	for _, s := range list {
		out = append(out, sessionLog{path: filepath.Join(p, filepath.FromSlash(s.Path)), client: s.Client})
	}
	return out, nil
}

// findingJSON is one finding of --json.
type findingJSON struct {
	File        string   `json:"file"`
	Session     string   `json:"session"`
	Client      string   `json:"client,omitempty"`
	Turn        int64    `json:"turn"`
	Name        string   `json:"name"`
	Seqs        []int64  `json:"seqs"`
	CallIDs     []string `json:"call_ids,omitempty"`
	Explanation string   `json:"explanation"`
}

// findingsOf prints the findings of one log's turns and counts them.
func findingsOf(e *env, l sessionLog, cfg findings.Config, session string, asJSON bool) (int, error) {
	f, err := openInput(l.path, e.stdin)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in, err := newInput(l.path, f, session, e.stderr, false)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	eng := turnengine.New(turnengine.Config{Findings: cfg})
	if err := replayTurns(eng, in, time.Now()); err != nil {
		return 0, err
	}
	n := 0
	for _, t := range eng.Drain() {
		for _, fd := range t.Findings {
			n++
			_, id := clientid.Split(t.SessionID)
			if asJSON {
				writeJSONLine(e.stdout, findingJSON{File: l.path, Session: id, Client: l.client, Turn: t.Number, Name: fd.Name,
					Seqs: fd.Seqs, CallIDs: fd.CallIDs, Explanation: fd.Explanation})
				continue
			}
			whose := ""
			if l.client != "" {
				whose = " of client " + l.client
			}
			fmt.Fprintf(e.stdout, "%s: session %s%s turn %d: %s: %s %s\n", l.path, id, whose, t.Number, fd.Name, fd.Explanation, evidenceText(fd))
		}
	}
	return n, nil
}

// evidenceText is a finding's evidence in words: its seqs and calls.
func evidenceText(f findings.Finding) string {
	seqs := make([]string, len(f.Seqs))
	for i, s := range f.Seqs {
		seqs[i] = strconv.FormatInt(s, 10)
	}
	noun := "seqs"
	if len(seqs) == 1 {
		noun = "seq"
	}
	out := "(" + noun + " " + strings.Join(seqs, ", ")
	if len(f.CallIDs) > 0 {
		out += "; " + plural(len(f.CallIDs), "call") + " " + strings.Join(f.CallIDs, ", ")
	}
	return out + ")"
}
