package turnmodel_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// logs are the files the suite runs over: every sample log of testdata/
// and, when a corpus is found, every corpus file.
func logs(t *testing.T) []string { return testcorpus.All(t) }

type span struct {
	trace pcommon.TraceID
	id    pcommon.SpanID
}

// TestPlacesAreSpans: for every event the cursor places in a span, the
// turn engine — which builds the spans from the same cursor — emits that
// span, in that trace; and every span the engine emits has at least one
// event placed in it (a dangling turn's, too). So the ids the receiver and
// the processor put on a record are the ids of a real span.
func TestPlacesAreSpans(t *testing.T) {
	for _, path := range logs(t) {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			rows := testlog.Rows(t, path, "fallback-session")
			eng := turnengine.New(turnengine.Config{})
			now := time.Unix(1_800_000_000, 0)
			cursors := map[string]*turnmodel.Cursor{}
			placed := map[span]string{}
			for _, r := range rows {
				if r.Header != nil && cursors[r.Session] == nil {
					c := turnmodel.NewCursor(r.Session)
					if r.Header.HasSeedLength {
						c.SetFork(r.Header.ParentSession, r.Header.SeedLength)
					}
					cursors[r.Session] = c
				}
				for i := range r.Events {
					ev := &r.Events[i]
					eng.Ingest(turnengine.Input{SessionID: r.Session, Event: ev, Format: r.Format, Header: r.Header}, now)
					c := cursors[r.Session]
					if c == nil {
						c = turnmodel.NewCursor(r.Session)
						cursors[r.Session] = c
					}
					m := ev.TurnModel(r.Format)
					pl := c.Advance(&m)
					if !pl.Spanned() || pl.Inherited { // inherited: the parent's spans
						continue
					}
					tr, sp := pl.IDs()
					placed[span{pcommon.TraceID(tr), pcommon.SpanID(sp)}] = fmt.Sprintf("seq %d %s", ev.Seq, ev.Type)
				}
			}
			eng.Flush(turnengine.CauseEndOfInput, now)
			emitted := map[span]string{}
			td := turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", eng.Drain())
			for _, rs := range td.ResourceSpans().All() {
				for _, ss := range rs.ScopeSpans().All() {
					for _, s := range ss.Spans().All() {
						emitted[span{s.TraceID(), s.SpanID()}] = s.Name()
					}
				}
			}
			for k, what := range placed {
				if _, ok := emitted[k]; !ok {
					t.Errorf("%s is placed in span %s of trace %s, which the engine does not emit", what, k.id, k.trace)
				}
			}
			for k, name := range emitted {
				if _, ok := placed[k]; !ok {
					t.Errorf("the engine emits span %q (%s) but no event is placed in it", name, k.id)
				}
			}
			if len(emitted) == 0 && strings.Contains(path, "dialects") && !strings.Contains(path, "wrap-") {
				t.Log("no spans")
			}
		})
	}
}

// seedRows are a seed-dialect turn with one tool call and the given result.
func seedRows(result string) string {
	return `{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":2,"data":{"turn":1,"step":1}}
{"type":"assistant/message","seq":2,"time":3,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"bash","input":{"command":"ls"}}]}},"surfaceOp":"append"}
{"type":"tool/call","seq":3,"time":4,"data":{"turn":1,"step":1,"callId":"call_1","name":"bash","arguments":"{\"command\":\"ls\"}"}}
` + result + `
{"type":"step/end","seq":5,"time":6,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":6,"time":7,"data":{"turn":1,"reason":{"kind":"completed"}}}
`
}

// TestSeedResultPairing: a seed-dialect tool/result pairs only by citing
// the tool/call or by naming its tool; one that does neither closes no
// call — the validator reports TOOL_RESULT_NO_CALL and, at the step's end,
// TOOL_CALL_UNRESOLVED; the engine leaves the call's outcome unknown; the
// cursor places the result outside the call's span.
func TestSeedResultPairing(t *testing.T) {
	for _, tc := range []struct {
		name, result string
		paired       bool
	}{
		{"cites the call", `{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"other","content":"x","isError":false}},"surfaceOp":"append","sourceEventSeqs":[3]}`, true},
		{"names the tool", `{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"bash","content":"x","isError":false}},"surfaceOp":"append","sourceEventSeqs":[0]}`, true},
		{"cites another seq, names another tool", `{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"grep","content":"x","isError":false}},"surfaceOp":"append","sourceEventSeqs":[2]}`, false},
		{"names another tool", `{"type":"tool/result","seq":4,"time":5,"data":{"turn":1,"step":1,"message":{"role":"tool","toolName":"grep","content":"x","isError":false}},"surfaceOp":"append"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := testlog.Read(t, strings.NewReader(seedRows(tc.result)), "s")
			v := sessionlog.NewValidator()
			var codes []string
			c := turnmodel.NewCursor("s")
			var resultPlace turnmodel.Place
			eng := turnengine.New(turnengine.Config{})
			for _, r := range rows {
				for _, viol := range v.Row(r.Row, r.Format) {
					codes = append(codes, viol.Code)
				}
				for i := range r.Events {
					ev := &r.Events[i]
					m := ev.TurnModel(r.Format)
					if pl := c.Advance(&m); ev.Type == "tool/result" {
						resultPlace = pl
						if !r.Format.Seed {
							t.Fatalf("the result is not read as the seed dialect: %+v", r.Format)
						}
					}
					eng.Ingest(turnengine.Input{SessionID: "s", Event: ev, Format: r.Format}, time.Unix(0, 0))
				}
			}
			turns := eng.Drain()
			if len(turns) != 1 || len(turns[0].Steps) != 1 {
				t.Fatalf("turns %+v", turns)
			}
			tools := turns[0].Steps[0].Tools
			if tc.paired {
				if len(codes) != 0 {
					t.Errorf("violations %v, want none", codes)
				}
				if !resultPlace.Paired || resultPlace.CallID != "call_1" {
					t.Errorf("result placed %+v, want paired with call_1", resultPlace)
				}
				if len(tools) != 1 || tools[0].Outcome != "ok" {
					t.Errorf("engine tools %+v, want call_1 ok", tools)
				}
				return
			}
			want := []string{sessionlog.CodeToolResultNoCall, sessionlog.CodeToolCallUnresolved}
			if fmt.Sprint(codes) != fmt.Sprint(want) {
				t.Errorf("violations %v, want %v", codes, want)
			}
			if resultPlace.Paired || resultPlace.CallID == "call_1" {
				t.Errorf("result placed %+v, want no call", resultPlace)
			}
			if len(tools) != 2 || tools[0].CallID != "call_1" || tools[0].Outcome != "unknown" || !tools[1].NotStarted {
				t.Errorf("engine tools %+v, want call_1 unknown and the result on its own", tools)
			}
		})
	}
}
