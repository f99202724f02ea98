//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// samplingRatio is the session_ratio of the sampling scenarios.
const samplingRatio = 0.3

// mixedTurns are a synthetic session's turns: testlog.MixedTurns (clean
// ones, an error, a tool loop, a max-tokens stop) and a last turn left open
// (closed as dangling).
var mixedTurns = append(testlog.MixedTurns(), testlog.Turn{})

// samplingSessions are the suite's posted corpus sessions and n synthetic
// sessions of mixed outcomes, all sent over HTTP.
func samplingSessions(t *testing.T, n int) []session {
	var ss []session
	for _, s := range load(t, testcorpus.Dir(t)) {
		if s.via != viaTail && s.via != viaTailLive {
			ss = append(ss, s)
		}
	}
	for i := range n {
		id := fmt.Sprintf("e2e-mixed-%02d", i)
		ss = append(ss, session{file: id, via: viaPost, id: id, body: []byte(testlog.SynthTurns(id, 3, mixedTurns))})
	}
	return ss
}

// postInParts posts every session in three parts cut at line ends, the
// sessions' parts interleaved, as live clients send them: turns stay open
// across requests, and their finished steps are emitted (or held) live.
func postInParts(t *testing.T, base string, ss []session) {
	t.Helper()
	parts := make([][][]byte, len(ss))
	for i, s := range ss {
		lines := bytes.SplitAfter(s.body, []byte("\n"))
		third := (len(lines) + 2) / 3
		for k := 0; k < len(lines); k += third {
			parts[i] = append(parts[i], bytes.Join(lines[k:min(k+third, len(lines))], nil))
		}
	}
	for k := 0; k < 3; k++ {
		for i, s := range ss {
			if k >= len(parts[i]) || len(bytes.TrimSpace(parts[i][k])) == 0 {
				continue
			}
			url := base + "/v1/sessions/" + s.id + "/events"
			if s.via == viaWire {
				url = base + "/v1/session-events"
			}
			if res := post(t, url, s.via, parts[i][k]); res.code != http.StatusAccepted {
				t.Fatalf("%s part %d: HTTP %d %s", s.file, k+1, res.code, res.raw)
			}
		}
	}
}

// samplingPlan is which turns must be in Jaeger and which must not.
type samplingPlan struct {
	kept, dropped []*turnengine.Turn
	wentWrong     map[*turnengine.Turn]bool
	keptSessions  map[string]bool
}

func planSampling(s *sampling.Sampler, turns []*turnengine.Turn) samplingPlan {
	p := samplingPlan{wentWrong: map[*turnengine.Turn]bool{}, keptSessions: map[string]bool{}}
	for _, turn := range turns {
		d := s.Decide(turn)
		switch {
		case !d.Keep:
			p.dropped = append(p.dropped, turn)
		case d.Reason == sampling.Session:
			p.kept = append(p.kept, turn)
			p.keptSessions[turn.SessionID] = true
		default:
			p.kept = append(p.kept, turn)
			p.wentWrong[turn] = true
		}
	}
	return p
}

// checkSampled checks the plan against Jaeger: every kept turn whole and
// stored once, each span with the tracestate of why it was kept; then, with
// every kept turn in, no span of any dropped turn.
func checkSampled(t *testing.T, ctx context.Context, query string, s *sampling.Sampler, p samplingPlan, procs ...*process) {
	t.Helper()
	res := checkTurns(ctx, query, p.kept, true)
	report(t.Errorf, res.problems)
	checkTraceStates(t, ctx, query, s, p)
	checkDropped(t, ctx, query, p)
	noPanic(t, procs)
}

// checkTraceStates checks the tracestate of every span of the kept turns:
// a dropped session's turn, kept for what went wrong, at th:0; a kept
// session's at the ratio's threshold and its randomness, except the root
// of a turn that went wrong (th:0).
func checkTraceStates(t *testing.T, ctx context.Context, query string, s *sampling.Sampler, p samplingPlan) {
	t.Helper()
	for _, turn := range p.kept {
		td, err := jaegerTrace(ctx, query, turnrender.TraceID(turn.SessionID, turn.Number))
		if err != nil {
			continue // reported by the turn's check
		}
		sessionState := s.TraceState(turn.SessionID)
		if !s.SessionKept(turn.SessionID) {
			sessionState = "ot=th:0"
		}
		for _, sp := range spansByID(td) {
			want := sessionState
			if sp.ParentSpanID().IsEmpty() && p.wentWrong[turn] {
				want = "ot=th:0"
			}
			if got := sp.TraceState().AsRaw(); got != want {
				t.Errorf("%s turn %d span %q: tracestate %q, want %q", turn.SessionID, turn.Number, sp.Name(), got, want)
			}
		}
	}
}

// checkDropped checks that Jaeger has no span of any dropped turn (call it
// once the kept turns are in: they came in the same batches).
func checkDropped(t *testing.T, ctx context.Context, query string, p samplingPlan) {
	t.Helper()
	for _, turn := range p.dropped {
		id := turnrender.TraceID(turn.SessionID, turn.Number)
		code, body, err := get(ctx, query+"/api/v3/traces/"+id.String())
		if err != nil || code != http.StatusNotFound {
			t.Errorf("%s turn %d (dropped): HTTP %d %v %.200s; want 404, no span", turn.SessionID, turn.Number, code, err, body)
		}
	}
}

// TestSampling: session_ratio 0.3 on the suite's collector (live steps,
// the journal), fed over HTTP in interleaved parts the posted corpus
// sessions and 40 synthetic sessions of mixed outcomes, into real Jaeger
// and Prometheus. Every turn that went wrong is in Jaeger whole — the
// steps held back for a dropped session included — at th:0; every turn of
// the sessions the hash keeps is there whole with the ratio's threshold;
// no span of any other turn is; and Prometheus holds exactly the series an
// unsampled run gives (the expectation TestEndToEnd holds the collector
// to), with the sampling's own counters adding up to every turn.
func TestSampling(t *testing.T) {
	ctx := context.Background()
	ss := samplingSessions(t, 40)
	want := expect(t, ss)
	s := sampling.New(sampling.Config{SessionRatio: samplingRatio, MaxHeldSpans: sampling.DefaultMaxHeldSpans})
	plan := planSampling(s, want.turns)
	synthetic, syntheticKept := 0, 0
	for _, x := range ss {
		if strings.HasPrefix(x.id, "e2e-mixed-") {
			synthetic++
			if s.SessionKept(x.id) {
				syntheticKept++
			}
		}
	}
	t.Logf("%d turns: %d kept (%d for what went wrong), %d dropped; %d of %d synthetic sessions kept by the hash",
		len(want.turns), len(plan.kept), len(plan.wentWrong), len(plan.dropped), syntheticKept, synthetic)
	if syntheticKept < 4 || syntheticKept > 20 {
		t.Fatalf("%d of %d sessions kept at ratio %v: not about the share", syntheticKept, synthetic, samplingRatio)
	}
	if len(plan.dropped) == 0 || len(plan.wentWrong) < synthetic*4 {
		t.Fatalf("the plan drops %d turns and keeps %d for what went wrong: the scenario proves nothing", len(plan.dropped), len(plan.wentWrong))
	}

	dir := t.TempDir()
	j := newJaegerPorts(t)
	c := newCollector(t, dir, testConfig("suite")).toJaeger(j).
		with(fmt.Sprintf("--set=connectors::turn_state::sampling::session_ratio=%v", samplingRatio))
	jaeger := startJaeger(t, dir, "jaeger", j)
	col := c.start("otelcol-dsh")
	prom := startPrometheus(t, dir, c)
	procs := []*process{jaeger, col, prom.process}

	postInParts(t, c.ingestURL(), ss)
	checkSampled(t, ctx, j.query(), s, plan, procs...)

	diffs := awaitSeries(t, ctx, prom.url, expectedSeries(want.metrics))
	for _, d := range diffs {
		t.Errorf("metrics with sampling: %s", d)
	}
	poll(t, "the sampling counters add up to every turn", 20*time.Second, func() error {
		const name = "otelcol_connector_turn_state_turns_sampled"
		kept, err := promQuery(ctx, prom.url, `sum(`+name+`{sampled="true"})`)
		if err != nil || len(kept) != 1 {
			_, body, _ := get(ctx, c.selfURL())
			var lines []string
			for _, l := range strings.Split(string(body), "\n") {
				if strings.Contains(l, "sampl") {
					lines = append(lines, l)
				}
			}
			return fmt.Errorf("kept: %v %v; the collector says\n%s", kept, err, strings.Join(lines, "\n"))
		}
		dropped, err := promQuery(ctx, prom.url, `sum(`+name+`{sampled="false",reason="ratio"})`)
		if err != nil || len(dropped) != 1 {
			return fmt.Errorf("dropped: %v %v", dropped, err)
		}
		if int(kept[0].value) != len(plan.kept) || int(dropped[0].value) != len(plan.dropped) {
			return fmt.Errorf("kept %v dropped %v; want %d and %d", kept[0].value, dropped[0].value, len(plan.kept), len(plan.dropped))
		}
		return nil
	}, procs...)
	if v := c.self("otelcol_connector_turn_state_sampling_steps_dropped"); v != 0 {
		t.Errorf("%v held steps let go of at the bound; want none", v)
	}
}
