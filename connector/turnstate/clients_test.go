package turnstate

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// named is a client's auth data as basicauth gives it.
type named string

func (n named) GetAttribute(name string) any {
	if name == "username" {
		return string(n)
	}
	return nil
}

func (named) GetAttributeNames() []string { return []string{"username"} }

// as is a request context of an authenticated client.
func as(who string) context.Context {
	return client.NewContext(context.Background(), client.Info{Auth: named(who)})
}

// byClient copies records, each resource naming the client.
func byClient(ld plog.Logs, who string) plog.Logs {
	out := plog.NewLogs()
	ld.CopyTo(out)
	for i := 0; i < out.ResourceLogs().Len(); i++ {
		out.ResourceLogs().At(i).Resource().Attributes().PutStr(semconv.EnduserID, who)
	}
	return out
}

// turnRoots are the root spans of the closed turns, with their resource.
func turnRoots(td ptrace.Traces) map[pcommon.TraceID]pcommon.Resource {
	out := map[pcommon.TraceID]pcommon.Resource{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			spans := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if spans.At(k).ParentSpanID().IsEmpty() {
					out[spans.At(k).TraceID()] = rs.Resource()
				}
			}
		}
	}
	return out
}

func attr(r pcommon.Resource, key string) string {
	if v, ok := r.Attributes().Get(key); ok {
		return v.AsString()
	}
	return ""
}

// Two clients' sessions of one id are two sessions: each turn closes once
// per client, in a trace of its own derived from (client, session), with
// the client on its resource and the session id as it was sent — whether
// the records name their client (the session_event receiver, the Kafka
// tier) or the request's authenticator does (dsh's own OTLP export on an
// authenticated OTLP receiver).
func TestSessionsBelongToTheirClient(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join("..", "..", "testdata", "dialects", "v4-tools.jsonl"), "shared-1")
	session := sessionOf(t, records)
	for _, how := range []string{"records name them", "request names them"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, createDefaultConfig(), nil, nil)
			h.start()
			if how == "records name them" {
				h.feed(byClient(records, "alice"))
				h.feed(byClient(records, "bob"))
			} else {
				h.feedCtx(as("alice"), records)
				h.feedCtx(as("bob"), records)
			}
			h.feed(records) // and one anonymous client's
			roots := turnRoots(h.allTraces())
			require.Len(t, roots, 3, "one turn per client")
			for _, who := range []string{"alice", "bob", ""} {
				res, ok := roots[turnrender.TraceID(clientid.Key(who, session), 1)]
				require.True(t, ok, "client %q: the trace derived from (client, session)", who)
				assert.Equal(t, who, attr(res, semconv.EnduserID))
				assert.Equal(t, session, attr(res, semconv.SessionID))
			}
			_, anonymous := roots[turnrender.TraceID(session, 1)]
			assert.True(t, anonymous, "no client: today's ids")
			h.shutdown()
		})
	}
}

// A turn of a client named only by its request's context survives a crash
// in the journal as that client's: restored, it closes once, in the
// client's trace.
func TestClientSessionJournaled(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join("..", "..", "testdata", "dialects", "v4-tools.jsonl"), "shared-1")
	session := sessionOf(t, records)
	bs := batches(records, 3)
	dir := t.TempDir()
	run1 := journaled(t, dir)
	k := 0
	for ; k < len(bs) && run1.core().engine.OpenTurns() == 0; k++ {
		run1.feedCtx(as("alice"), bs[k])
	}
	require.Equal(t, 1, run1.core().engine.OpenTurns(), "the turn is open at the crash")
	run1.crash()

	run2 := journaled(t, dir)
	require.Equal(t, 1, run2.core().engine.OpenTurns(), "restored")
	for _, b := range bs[k:] {
		run2.feedCtx(as("alice"), b)
	}
	roots := turnRoots(mergeTraces(run1, run2))
	require.Len(t, roots, 1)
	res, ok := roots[turnrender.TraceID(clientid.Key("alice", session), 1)]
	require.True(t, ok, "alice's trace")
	assert.Equal(t, "alice", attr(res, semconv.EnduserID))
	run2.shutdown()
}

// sessionOf is the session id of a batch's first record.
func sessionOf(t *testing.T, ld plog.Logs) string {
	t.Helper()
	v, ok := ld.ResourceLogs().At(0).Resource().Attributes().Get(semconv.SessionID)
	require.True(t, ok)
	return v.Str()
}

// dsh.turns gains no per-client label unless turns_by_client says so.
func TestTurnsByClient(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join("..", "..", "testdata", "dialects", "v4-tools.jsonl"), "shared-1")
	for _, on := range []bool{false, true} {
		cfg := createDefaultConfig()
		cfg.TurnsByClient = on
		h := newHarness(t, cfg, nil, nil)
		h.start()
		h.feedCtx(as("alice"), records)
		h.feedCtx(as("bob"), records)
		h.shutdown()
		m, ok := findMetric(h.lastMetrics(), turnrender.MetricTurns)
		require.True(t, ok)
		clients := map[string]int64{}
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			who := ""
			if v, ok := dps.At(i).Attributes().Get(semconv.EnduserID); ok {
				who = v.Str()
			}
			clients[who] += dps.At(i).IntValue()
		}
		if on {
			assert.Equal(t, map[string]int64{"alice": 1, "bob": 1}, clients)
		} else {
			assert.Equal(t, map[string]int64{"": 2}, clients, "no client label")
		}
	}
}
