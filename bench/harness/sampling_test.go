package main

import (
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

func TestSamplingConfigSetsTheRatio(t *testing.T) {
	cfg := samplingConfig("/c/**/session*.jsonl", "/s.json", 0.1)
	want := "connectors:\n  turn_state:\n    sampling:\n      session_ratio: 0.1\nexporters:\n"
	if !strings.Contains(cfg, want) {
		t.Fatalf("config has no %q:\n%s", want, cfg)
	}
	if base := dshConfig("/c/**/session*.jsonl", "/s.json", false); strings.Replace(cfg, "    sampling:\n      session_ratio: 0.1\n", "", 1) != base {
		t.Fatalf("config differs from compare's beyond the ratio:\n%s", cfg)
	}
}

// The repository's session logs have turns that went wrong, clean turns and
// turns left open: at ratio 1 every span is kept, at ratio 0 only those of
// the turns kept for what went wrong, and a ratio in between lies between.
func TestExpectSampledBounds(t *testing.T) {
	files := testcorpus.Testdata(t)
	at := func(ratio float64) *expected {
		cfg := sampling.Defaults()
		cfg.SessionRatio = ratio
		e, err := expectSampled(files, sampling.New(cfg))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	all, none, half := at(1), at(0), at(0.5)
	if all.kept != all.all || all.turnsKept != all.turns || all.sessionsKept != all.sessions || all.heldBound != 0 {
		t.Errorf("ratio 1 kept %d of %d spans, %d of %d turns, %d of %d sessions, held %d", all.kept, all.all,
			all.turnsKept, all.turns, all.sessionsKept, all.sessions, all.heldBound)
	}
	if none.sessionsKept != 0 || none.reasons[sampling.Session] != 0 || none.reasons[sampling.Ratio] == 0 {
		t.Errorf("ratio 0 kept %d sessions, reasons %v", none.sessionsKept, none.reasons)
	}
	if none.reasons[sampling.Outcome] == 0 || none.kept == 0 || none.kept >= all.kept {
		t.Errorf("ratio 0 kept %d of %d spans, reasons %v: want the turns that went wrong only", none.kept, all.all, none.reasons)
	}
	if half.kept < none.kept || half.kept > all.kept || half.all != all.all {
		t.Errorf("ratio 0.5 kept %d spans (ratio 0 %d, ratio 1 %d)", half.kept, none.kept, all.kept)
	}
}
