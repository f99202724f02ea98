//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// How a session reaches the collector.
const (
	viaPost     = "post"      // POST /v1/sessions/{id}/events, plain
	viaPostGzip = "post-gzip" // same, Content-Encoding: gzip
	viaPostZstd = "post-zstd" // same, Content-Encoding: zstd
	viaWire     = "wire"      // POST /v1/session-events, ids in the lines
	viaTail     = "tail"      // a file in the tailed dsh root before the collector starts
	viaTailLive = "tail-live" // a file written in two halves while the collector runs
)

// session is one corpus log the suite feeds to the collector.
type session struct {
	file string // relative to the corpus
	via  string
	// id is the session id: the path id of a post; for a wire stream the id
	// its lines are rewritten to (they all carry a placeholder); for a
	// tailed file the id of its header, which names its directory too.
	id string
	// placeholder is the wire lines' session id that id replaces.
	placeholder string
	body        []byte // what is sent or written
}

// sessions are chosen to cover every turn end (completed, error, aborted,
// max-tokens, interrupted, dangling), tool outcomes (ok, error, unknown),
// parallel calls, compaction, dsh format v0 and v4, both wire wrappers, both
// HTTP endpoints with each content encoding, and file tailing. Several corpus
// files share the placeholder id {{sessionId}}: those are posted under
// distinct path ids.
var sessions = []session{
	{file: "v0/examples/acp-agent/tests/snapshots/error-finish/session.jsonl", via: viaPost, id: "e2e-v0-error-finish"},
	{file: "v0/examples/acp-agent/tests/snapshots/cancel/session.jsonl", via: viaPost, id: "e2e-v0-cancel"},
	{file: "v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl", via: viaPostGzip, id: "e2e-v0-parallel-tool-calls"},
	{file: "v0/examples/headless-agent/tests/semantic-checkpoint-snapshots/tool-outcome-unknown/session.expected.jsonl", via: viaPost, id: "e2e-v0-tool-outcome-unknown"},
	{file: "v0/examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl", via: viaPost, id: "e2e-v0-compaction-recovery"},
	{file: "v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl", via: viaPostZstd, id: "e2e-v4-max-tokens-continue"},
	{file: "v4/snapshots/sdk/tool-error-details/session.v4.jsonl", via: viaPost, id: "e2e-v4-tool-error-details"},
	{file: "v4/snapshots/acp/cancel/session.v4.jsonl", via: viaPost, id: "e2e-v4-cancel"},
	{file: "v4/snapshots/session/error-finish/writer.expected.jsonl", via: viaPost, id: "e2e-v4-error-finish"},
	{file: "wire/v4/snapshots/sdk/text-turn/notifications.expected.jsonl", via: viaWire, id: "e2e-wire-v4-text-turn", placeholder: "{{session:1}}"},
	{file: "wire/v0/examples/headless-agent/tests/snapshots/provider-retry/stream-json.expected.jsonl", via: viaWire, id: "e2e-wire-v0-provider-retry", placeholder: "{{sessionId}}"},
	{file: "v0/examples/acp-agent/tests/snapshots/max-tokens-continue/session.jsonl", via: viaTail, id: "7f1c9a04-5b52-4a7e-9a63-1d2ab7c90d11"},
	{file: "v0/examples/acp-agent/tests/snapshots/multi-turn/session.jsonl", via: viaTail, id: "228b7b82-84ed-49b7-a567-981c03b28c77"},
	{file: "v0/examples/acp-agent/tests/snapshots/bash-tool-turn/session.jsonl", via: viaTail, id: "e128dda9-ed11-4868-8266-0ef90d03c3d6"},
	{file: "v0/examples/acp-agent/tests/snapshots/fs-edit/session.jsonl", via: viaTail, id: "736c4bd8-41bd-43fb-9030-b4df3b2a4f83"},
	{file: "v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl", via: viaTail, id: "12121212-3434-4545-8686-787878787878"},
	{file: "v0/examples/acp-agent/tests/snapshots/escalation-approved/session.jsonl", via: viaTailLive, id: "f3cbd087-fb45-4b32-b0f2-3082d65bfcb4"},
}

// load reads every session's body from the corpus (never copied into the
// repository; the tailed ones go to a temporary dsh root).
func load(t *testing.T, corpus string) []session {
	t.Helper()
	out := make([]session, len(sessions))
	for i, s := range sessions {
		b, err := os.ReadFile(filepath.Join(corpus, s.file))
		if err != nil {
			t.Fatalf("corpus: %v", err)
		}
		if s.placeholder != "" {
			b = bytes.ReplaceAll(b, []byte(`"sessionId":"`+s.placeholder+`"`), []byte(`"sessionId":"`+s.id+`"`))
		}
		s.body = b
		out[i] = s
	}
	return out
}

// expectation is what the collector must produce for the sessions, computed
// by the turn engine in process: the same deterministic ids, spans and
// metrics that the pipeline (receiver → connector → exporters → backends)
// must deliver unchanged.
type expectation struct {
	turns   []*turnengine.Turn
	metrics pmetric.Metrics
}

func expect(t *testing.T, ss []session) expectation {
	t.Helper()
	series := turnrender.NewMetrics(0)
	eng := turnengine.New(turnengine.Config{Observer: series})
	now := time.Now()
	for _, s := range ss {
		if err := replay(eng, s, now); err != nil {
			t.Fatalf("%s: %v", s.file, err)
		}
	}
	eng.Flush(turnengine.CauseEndOfInput, now)
	turns := eng.Drain()
	for _, t := range turns {
		if t.Dangling() {
			// The collector closes them after its dangling_timeout (3s in
			// testdata/collector/suite.yaml), not at the end of the input.
			t.DanglingCause = turnengine.CauseTimeout
		}
	}
	sort.Slice(turns, func(i, j int) bool {
		if turns[i].SessionID != turns[j].SessionID {
			return turns[i].SessionID < turns[j].SessionID
		}
		return turns[i].Number < turns[j].Number
	})
	md := pmetric.NewMetrics()
	series.AppendTo(md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty(), now, eng.OpenTurns())
	return expectation{turns: turns, metrics: md}
}

// replay feeds one session to the engine under the id the collector sees:
// the path id of a post, the ids in the lines of a wire stream, the header's
// id of a tailed file.
func replay(eng *turnengine.Engine, s session, now time.Time) error {
	dec, err := sessionlog.NewDecoder(bytes.NewReader(s.body), sessionlog.Options{})
	if err != nil {
		return err
	}
	defer dec.Close()
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		id := s.id
		if s.via == viaWire {
			id = row.SessionID
		}
		for i := range row.Events {
			eng.Ingest(turnengine.Input{SessionID: id, Event: &row.Events[i], Format: dec.Format(), Header: dec.Header()}, now)
		}
	}
}

// traceOf is the expected OTLP trace of one turn.
func traceOf(turn *turnengine.Turn) ptrace.Traces {
	return turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", []*turnengine.Turn{turn})
}

// spansByID flattens traces into their spans by span id.
func spansByID(td ptrace.Traces) map[pcommon.SpanID]ptrace.Span {
	out := map[pcommon.SpanID]ptrace.Span{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			spans := ss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				out[spans.At(k).SpanID()] = spans.At(k)
			}
		}
	}
	return out
}

// promName is the name the contrib prometheus exporter (v0.165.1, default
// translation) gives an OTel metric: dots to underscores, the unit as a
// suffix (annotations in braces dropped, s → seconds), _total on counters.
func promName(name, unit string, counter bool) string {
	n := strings.ReplaceAll(name, ".", "_")
	switch unit {
	case "s":
		n += "_seconds"
	case "", "1":
	default:
		if !strings.HasPrefix(unit, "{") {
			n += "_" + unit
		}
	}
	if counter {
		n += "_total"
	}
	return n
}

// promLabel is an attribute key as a Prometheus label name.
func promLabel(key string) string { return strings.ReplaceAll(key, ".", "_") }
