package turnstate

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/processor/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// ev appends one event as dsh v4's export carries it.
func ev(t *testing.T, lrs plog.LogRecordSlice, session, typ string, seq int64, data map[string]any) plog.LogRecord {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": typ, "seq": seq, "time": 1790000000000 + seq, "data": data})
	require.NoError(t, err)
	lr := lrs.AppendEmpty()
	lr.SetEventName("session-log")
	lr.Body().SetStr("session-log")
	lr.Attributes().PutStr("sessionId", session)
	lr.Attributes().PutStr("content", string(b))
	lr.Attributes().PutInt("event.seq", seq)
	lr.Attributes().PutStr("event.type", typ)
	return lr
}

func turn(n int) map[string]any    { return map[string]any{"turn": n} }
func step(n, s int) map[string]any { return map[string]any{"turn": n, "step": s} }
func newBatch() (plog.Logs, plog.LogRecordSlice) {
	ld := plog.NewLogs()
	return ld, ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
}

// recordAt is the i-th record of a batch's first scope.
func recordAt(ld plog.Logs, i int) plog.LogRecord {
	return ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(i)
}

func protoOf(t *testing.T, lr plog.LogRecord) []byte {
	t.Helper()
	ld := plog.NewLogs()
	lr.CopyTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
	b, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
	require.NoError(t, err)
	return b
}

// Records of other applications, and dsh's own operational records, pass
// byte for byte, between session records of the same scope.
func TestOtherRecordsUntouched(t *testing.T) {
	ld, lrs := newBatch()
	others := []int{}
	other := func(fill func(plog.LogRecord)) {
		lr := lrs.AppendEmpty()
		lr.SetTimestamp(pcommon.Timestamp(1790000000000 * int64(time.Millisecond)))
		fill(lr)
		others = append(others, lrs.Len()-1)
	}
	other(func(lr plog.LogRecord) { lr.Body().SetStr("GET /index.html 200") })
	ev(t, lrs, "s1", "turn/start", 0, turn(1))
	other(func(lr plog.LogRecord) {
		lr.Body().SetStr("shutdown")
		lr.Attributes().PutStr("telemetry.op", "shutdown")
		lr.Attributes().PutStr("session.id", "s1")
	})
	ev(t, lrs, "s1", "step/start", 1, step(1, 1))
	other(func(lr plog.LogRecord) {
		// Another app's record with trace context and a dsh-like name.
		lr.SetTraceID(pcommon.TraceID{1, 2, 3})
		lr.SetSpanID(pcommon.SpanID{4, 5})
		lr.Attributes().PutStr("event.type", "turn/start")
		lr.Attributes().PutStr("dsh.turn", "x")
		lr.Body().SetEmptyMap().PutStr("msg", "hello")
	})
	other(func(lr plog.LogRecord) { lr.SetEventName("http.request") })
	want := map[int][]byte{}
	for _, i := range others {
		want[i] = protoOf(t, recordAt(ld, i))
	}
	h := newHarness(t, createDefaultConfig())
	out := h.feed(ld)
	require.Equal(t, ld.LogRecordCount(), out.LogRecordCount())
	for _, i := range others {
		assert.Equal(t, want[i], protoOf(t, recordAt(out, i)), "record %d changed", i)
	}
	assert.False(t, recordAt(out, 1).SpanID().IsEmpty(), "the turn/start is stamped")
	assert.False(t, recordAt(out, 3).SpanID().IsEmpty(), "the step/start is stamped")
	assert.Equal(t, int64(4), h.counter(metadata.MetricRecordsPassed))
	assert.Equal(t, int64(2), h.counter(metadata.MetricRecordsStamped))
}

// A redelivered batch, and a record repeated inside a batch, pass on
// unstamped and are counted as duplicates; the batch after them is placed
// as if they had never come.
func TestDuplicatesPassUnstamped(t *testing.T) {
	first, lrs := newBatch()
	ev(t, lrs, "s1", "turn/start", 0, turn(1))
	ev(t, lrs, "s1", "step/start", 1, step(1, 1))
	h := newHarness(t, createDefaultConfig())
	h.feed(first)
	again := h.feed(first)
	for i := 0; i < 2; i++ {
		lr := recordAt(again, i)
		assert.True(t, lr.TraceID().IsEmpty() && lr.SpanID().IsEmpty(), "redelivered record %d stamped", i)
		_, has := lr.Attributes().Get(semconv.DshTurn)
		assert.False(t, has)
		assert.Equal(t, protoOf(t, recordAt(first, i)), protoOf(t, lr))
	}
	assert.Equal(t, int64(2), h.counter(metadata.MetricRecordsDuplicate))

	next, lrs := newBatch()
	ev(t, lrs, "s1", "tool/call", 2, map[string]any{"turn": 1, "step": 1, "callId": "c1", "name": "read", "input": map[string]any{}})
	ev(t, lrs, "s1", "tool/call", 2, map[string]any{"turn": 1, "step": 1, "callId": "c1", "name": "read", "input": map[string]any{}})
	out := h.feed(next)
	assert.Equal(t, pcommon.SpanID(turnmodel.ToolSpanID("s1", 1, 1, "c1", "")), recordAt(out, 0).SpanID())
	assert.Equal(t, pcommon.TraceID(turnmodel.TraceIDOf("s1", 1)), recordAt(out, 0).TraceID())
	v, _ := recordAt(out, 0).Attributes().Get(semconv.GenAIToolCallID)
	assert.Equal(t, "c1", v.Str())
	assert.True(t, recordAt(out, 1).SpanID().IsEmpty(), "the repeat inside the batch is not stamped")
	assert.Equal(t, int64(3), h.counter(metadata.MetricRecordsDuplicate))
	assert.Equal(t, int64(3), h.counter(metadata.MetricRecordsStamped))
}

// Inside a batch events are placed in seq order, as the connector sorts
// them: a shuffled batch is stamped as the ordered one. Across batches they
// are placed in arrival order: an event behind one already applied passes
// unstamped, counted with the duplicates.
func TestOrder(t *testing.T) {
	var path string
	for _, p := range testcorpus.Testdata(t) {
		if filepath.Base(p) == "v4-tools.jsonl" {
			path = p
		}
	}
	require.NotEmpty(t, path)
	ld := dshV4Export(t, path)
	inOrder := newHarness(t, createDefaultConfig()).feed(ld)

	shuffled := plog.NewLogs()
	ld.CopyTo(shuffled)
	recs := shuffled.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	r := rand.New(rand.NewPCG(1, 2))
	perm := r.Perm(recs.Len())
	tmp := plog.NewLogRecordSlice()
	for _, i := range perm {
		recs.At(i).CopyTo(tmp.AppendEmpty())
	}
	tmp.CopyTo(recs)
	out := newHarness(t, createDefaultConfig()).feed(shuffled)
	bySeq := func(ld plog.Logs) map[int64]plog.LogRecord {
		m := map[int64]plog.LogRecord{}
		forEachRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) {
			v, _ := lr.Attributes().Get("event.seq")
			m[v.Int()] = lr
		})
		return m
	}
	want, got := bySeq(inOrder), bySeq(out)
	require.Len(t, got, len(want))
	stamped := 0
	for seq, w := range want {
		assert.Equal(t, protoOf(t, w), protoOf(t, got[seq]), "seq %d", seq)
		if !w.SpanID().IsEmpty() {
			stamped++
		}
	}
	require.NotZero(t, stamped)

	// Across batches: seq 1 after seq 2.
	h := newHarness(t, createDefaultConfig())
	b1, lrs := newBatch()
	ev(t, lrs, "s1", "turn/start", 0, turn(1))
	ev(t, lrs, "s1", "step/start", 2, step(1, 1))
	h.feed(b1)
	b2, lrs := newBatch()
	ev(t, lrs, "s1", "user/message", 1, map[string]any{"turn": 1})
	late := h.feed(b2)
	assert.True(t, recordAt(late, 0).SpanID().IsEmpty())
	assert.Equal(t, int64(1), h.counter(metadata.MetricRecordsDuplicate))
}

// At max_sessions the least recently active session is forgotten and
// counted; its open turn is closed, so its later events name no span —
// exactly as in the connector with the same bound.
func TestEviction(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxSessions = 2
	var bs []plog.Logs
	add := func(session, typ string, seq int64, data map[string]any) {
		ld, lrs := newBatch()
		ev(t, lrs, session, typ, seq, data)
		bs = append(bs, ld)
	}
	add("a", "turn/start", 0, turn(1))
	add("b", "turn/start", 0, turn(1))
	add("a", "step/start", 1, step(1, 1)) // a is now the most recent
	add("c", "turn/start", 0, turn(1))    // evicts b
	add("b", "step/start", 1, step(1, 1)) // b is new again, its turn unknown; evicts a
	add("c", "step/start", 1, step(1, 1))

	h := newHarness(t, cfg)
	var out []plog.Logs
	for _, b := range bs {
		out = append(out, h.feed(b))
	}
	assert.Equal(t, int64(2), h.counter(metadata.MetricSessionsEvicted))
	assert.Equal(t, int64(2), h.gauge(metadata.MetricSessionsTracked))
	assert.True(t, recordAt(out[4], 0).SpanID().IsEmpty(), "the evicted session's step names no span")
	assert.Equal(t, int64(1), h.counter(metadata.MetricRecordsUnplaced))
	assert.Equal(t, int64(5), h.counter(metadata.MetricRecordsStamped))

	spans := connectorSpansWith(t, bs, func(c map[string]any) { c["max_sessions"] = 2 })
	assert.Equal(t, 5, checkStamps(t, out, spans))
}

// At max_open_turns the oldest open turn is closed, as the connector
// closes it (dangling, evicted): its later events name no span.
func TestMaxOpenTurns(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.MaxOpenTurns = 1
	ld, lrs := newBatch()
	ev(t, lrs, "a", "turn/start", 0, turn(1))
	ev(t, lrs, "a", "step/start", 1, step(1, 1))
	b2, lrs2 := newBatch()
	ev(t, lrs2, "b", "turn/start", 0, turn(1)) // closes a's turn
	ev(t, lrs2, "a", "step/end", 2, step(1, 1))
	h := newHarness(t, cfg)
	out := []plog.Logs{h.feed(ld), h.feed(b2)}
	assert.False(t, recordAt(out[1], 0).SpanID().IsEmpty())
	assert.True(t, recordAt(out[1], 1).SpanID().IsEmpty(), "an event of the closed turn is late")
	spans := connectorSpansWith(t, []plog.Logs{ld, b2}, func(c map[string]any) { c["max_open_turns"] = 1 })
	assert.Equal(t, 3, checkStamps(t, out, spans))
}

// A session silent for dangling_timeout has its turn closed at its next
// arrival: the connector closed it as dangling by then.
func TestDanglingTimeout(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.DanglingTimeout = time.Minute
	h := newHarness(t, cfg)
	b1, lrs := newBatch()
	ev(t, lrs, "a", "turn/start", 0, turn(1))
	h.feed(b1)
	h.clock.Advance(59 * time.Second)
	b2, lrs := newBatch()
	ev(t, lrs, "a", "step/start", 1, step(1, 1))
	assert.False(t, recordAt(h.feed(b2), 0).SpanID().IsEmpty(), "within the timeout")
	h.clock.Advance(time.Minute)
	b3, lrs := newBatch()
	ev(t, lrs, "a", "step/end", 2, step(1, 1))
	ev(t, lrs, "a", "turn/start", 3, turn(2))
	out := h.feed(b3)
	assert.True(t, recordAt(out, 0).SpanID().IsEmpty(), "after the timeout the turn is closed")
	assert.Equal(t, pcommon.SpanID(turnmodel.TurnSpanID("a", 2)), recordAt(out, 1).SpanID(), "a new turn is placed")
}

// Session records that cannot be decoded pass untouched and are counted.
func TestInvalidRecords(t *testing.T) {
	ld, lrs := newBatch()
	bad := lrs.AppendEmpty()
	bad.SetEventName(logrecord.EventNameEvent)
	bad.Body().SetStr(`{"type":"turn/start","seq":`)
	bad.Attributes().PutStr(logrecord.AttrSessionID, "s1")
	bad2 := lrs.AppendEmpty()
	bad2.SetEventName("session-log")
	bad2.Attributes().PutStr("sessionId", "s1")
	bad2.Attributes().PutStr("content", `[1,2`)
	ev(t, lrs, "s1", "turn/start", 0, turn(1))
	want := []([]byte){protoOf(t, bad), protoOf(t, bad2)}
	h := newHarness(t, createDefaultConfig())
	out := h.feed(ld)
	for i := range want {
		assert.Equal(t, want[i], protoOf(t, recordAt(out, i)))
	}
	assert.Equal(t, int64(2), h.counter(metadata.MetricRecordsInvalid))
	assert.Equal(t, int64(1), h.counter(metadata.MetricRecordsStamped))
}

// Hostile attribute types and values never panic.
func TestHostileRecords(t *testing.T) {
	ld, lrs := newBatch()
	for _, fill := range []func(plog.LogRecord){
		func(lr plog.LogRecord) { lr.SetEventName(logrecord.EventNameEvent); lr.Body().SetInt(3) },
		func(lr plog.LogRecord) {
			lr.SetEventName(logrecord.EventNameHeader)
			lr.Attributes().PutStr(logrecord.AttrSessionID, "s")
			lr.Body().SetStr(`{"type":"session","version":99,"id":"s"}`)
		},
		func(lr plog.LogRecord) {
			lr.Attributes().PutInt(logrecord.AttrSessionID, 5)
			lr.Attributes().PutStr("event.type", "turn/start")
			lr.Attributes().PutStr("event.seq", "zero")
		},
		func(lr plog.LogRecord) {
			lr.Attributes().PutStr(logrecord.AttrSessionID, "s")
			lr.Attributes().PutStr("event.type", "turn/start")
			lr.Attributes().PutDouble("event.seq", -1e300)
			lr.Body().SetEmptySlice().AppendEmpty().SetStr("x")
		},
		func(lr plog.LogRecord) {
			lr.SetEventName("session-log")
			lr.Attributes().PutStr("sessionId", "s")
			lr.Attributes().PutStr("content", `{"type":"turn/start","seq":-5,"time":"x","data":{"turn":-1}}`)
		},
	} {
		fill(lrs.AppendEmpty())
	}
	h := newHarness(t, createDefaultConfig())
	out := h.feed(ld)
	assert.Equal(t, ld.LogRecordCount(), out.LogRecordCount())
	forEachRecord(out, func(_ pcommon.Resource, lr plog.LogRecord) {
		assert.True(t, lr.SpanID().IsEmpty())
	})
}

// A fork whose inherited prefix ends inside a turn: the prefix is the
// parent's (stamped with the parent's span ids), and the fork's own events
// of that turn belong to no span — the connector builds no turn it did
// not see start.
func TestForkCutInsideATurn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl")
	log := `{"type":"session","version":4,"id":"fork-1","createdAt":1789000000000,"cwd":"/w","parentSession":"parent-1","seedLength":3}
{"type":"turn/start","seq":0,"time":1789000000000,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":1789000000001,"data":{"turn":1,"step":1}}
{"type":"user/message","seq":2,"time":1789000000002,"data":{"id":"u1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}}
{"type":"step/end","seq":3,"time":1789000000003,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":4,"time":1789000000004,"data":{"turn":1,"reason":{"kind":"completed"}}}
{"type":"turn/start","seq":5,"time":1789000000005,"data":{"turn":2}}
{"type":"turn/end","seq":6,"time":1789000000006,"data":{"turn":2,"reason":{"kind":"completed"}}}
`
	require.NoError(t, os.WriteFile(path, []byte(log), 0o600))
	ld := receiverRecords(t, path)
	bs := batches(ld, 2)
	h := newHarness(t, createDefaultConfig())
	var out []plog.Logs
	for _, b := range bs {
		out = append(out, h.feed(b))
	}
	spans := connectorSpans(t, bs)
	parent, ok := inheritedRecords(t, path)
	require.True(t, ok)
	for k, sp := range connectorSpans(t, batches(parent, 2)) {
		spans[k] = sp
	}
	// turn/start, step/start, user/message (the parent's); turn 2's two.
	assert.Equal(t, 5, checkStamps(t, out, spans))
	assert.Equal(t, int64(5), h.counter(metadata.MetricRecordsStamped))
	assert.Equal(t, int64(3), h.counter(metadata.MetricRecordsUnplaced), "the header, and the fork's step/end and turn/end of turn 1")
}
