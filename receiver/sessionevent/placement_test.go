package sessionevent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	tsprocessor "github.com/dshtrace/dshtrace/processor/turnstate"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// placementFallback is the session of a log whose rows name none: the
// directory the file receiver reads it from is named after it.
const placementFallback = "placement-session"

// placementKeys are the attributes that say where a record's event
// belongs; with the trace and span ids they are its placement.
var placementKeys = []string{semconv.DshTurn, semconv.DshStep, semconv.GenAIToolCallID, semconv.DshToolParentCallID}

// eventKey names one event: its session and seq.
type eventKey struct {
	session string
	seq     int64
}

// TestPlacementAgrees feeds every session log a run has (the repository's
// testdata and, when present, the real dsh corpus) through the two paths a
// dsh event takes to a trace: tailed from its file by this receiver, and
// exported by dsh itself over OTLP (v4's session-log records) and stamped
// by the turn_state processor. Every event record of the receiver must
// carry the same placement — dsh.turn, dsh.step, gen_ai.tool.call.id,
// dsh.tool.parent_call_id, trace and span ids — as the processor's record
// of the same event (a packed row's record: of its last member, whose
// place it carries).
//
// A fork's inherited prefix is the exception: dsh's export carries no
// header, so the processor cannot tell those events from the fork's own.
// Only a fork's own events (seq at or past its seedLength) are compared.
func TestPlacementAgrees(t *testing.T) {
	if !testcorpus.Available() {
		// Skipped with the one line that says how to run on the corpus.
		t.Run("corpus", func(t *testing.T) { testcorpus.Dir(t) })
	}
	for _, cf := range loadCorpus(t) {
		t.Run(cf.rel, func(t *testing.T) {
			path := corpusPath(t, cf.rel)
			received := receiveFile(t, cf)
			stamped := stampExport(t, path)
			compared, placed := comparePlacement(t, path, received, stamped)
			if compared == 0 {
				t.Fatalf("%s: no event record compared", cf.rel)
			}
			t.Logf("%d records compared, %d placed in a span", compared, placed)
		})
	}
}

// corpusPath is the absolute path of a log named as testcorpus.Logs names
// it.
func corpusPath(t *testing.T, rel string) string {
	t.Helper()
	for _, l := range testcorpus.Logs(t) {
		if l.Name == rel {
			return l.Path
		}
	}
	t.Fatalf("%s is no log of the run", rel)
	return ""
}

// receiveFile lays the log out as dsh does, tails it with a receiver of
// its own and returns the records it delivered.
func receiveFile(t *testing.T, cf corpusFile) []plog.Logs {
	t.Helper()
	root := t.TempDir()
	name := "session.jsonl"
	if cf.version > 0 {
		name = fmt.Sprintf("session.v%d.jsonl", cf.version)
	}
	writeFile(t, sessionPath(root, sessionroot.EscapeSessionID(placementFallback), name), cf.raw)
	sink := new(consumertest.LogsSink)
	s := start(t, filesOnlyConfig(pattern(root), nil), sink, nil)
	waitRecords(t, sink, len(cf.rows))
	s.stop()
	return sink.AllLogs()
}

// stampExport builds dsh v4's own OTLP log export of the log — event name
// session-log, the event's envelope in attribute content, one record per
// logical event, no trace context — and returns it as the turn_state
// processor stamped it, fed in batches of 16 records.
func stampExport(t *testing.T, path string) []plog.Logs {
	t.Helper()
	f := tsprocessor.NewFactory()
	sink := new(consumertest.LogsSink)
	p, err := f.CreateLogs(context.Background(), processortest.NewNopSettings(f.Type()), f.CreateDefaultConfig(), sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()

	var batch plog.LogRecordSlice
	var ld plog.Logs
	flush := func() {
		if ld != (plog.Logs{}) && ld.LogRecordCount() > 0 {
			require.NoError(t, p.ConsumeLogs(context.Background(), ld))
		}
		ld = plog.NewLogs()
		rl := ld.ResourceLogs().AppendEmpty()
		rl.Resource().Attributes().PutStr("service.name", "dsh")
		batch = rl.ScopeLogs().AppendEmpty().LogRecords()
	}
	flush()
	for _, r := range testlog.Rows(t, path, placementFallback) {
		for i := range r.Events {
			ev := &r.Events[i]
			lr := batch.AppendEmpty()
			lr.SetEventName("session-log")
			lr.Body().SetStr("session-log")
			lr.SetTimestamp(pcommon.Timestamp(ev.Time * int64(time.Millisecond)))
			lr.Attributes().PutStr("sessionId", r.Session)
			lr.Attributes().PutStr("content", string(ev.LogicalJSON()))
			lr.Attributes().PutInt(semconv.EventSeq, ev.Seq)
			lr.Attributes().PutStr(semconv.EventType, ev.Type)
			if batch.Len() == 16 {
				flush()
			}
		}
	}
	flush()
	return sink.AllLogs()
}

// comparePlacement checks each event record the receiver delivered
// against the processor's record of the same event. It returns how many
// records it compared and how many of them were placed in a span.
func comparePlacement(t *testing.T, path string, received, stamped []plog.Logs) (compared, placed int) {
	t.Helper()
	lastSeq := map[eventKey]int64{} // a row's first seq → its last member's
	seedLength := map[string]int64{}
	for _, r := range testlog.Rows(t, path, placementFallback) {
		if r.Header != nil && r.Header.HasSeedLength {
			seedLength[r.Session] = r.Header.SeedLength
		}
		if n := len(r.Events); n > 0 {
			lastSeq[eventKey{r.Session, r.Events[0].Seq}] = r.Events[n-1].Seq
		}
	}
	byEvent := map[eventKey]plog.LogRecord{}
	for _, ld := range stamped {
		eachRecord(ld, func(_ pcommon.Resource, lr plog.LogRecord) {
			session, _ := lr.Attributes().Get("sessionId")
			seq, _ := lr.Attributes().Get(semconv.EventSeq)
			k := eventKey{session.Str(), seq.Int()}
			if _, dup := byEvent[k]; !dup { // a repeated seq: the processor places the first
				byEvent[k] = lr
			}
		})
	}
	for _, ld := range received {
		eachRecord(ld, func(res pcommon.Resource, lr plog.LogRecord) {
			if lr.EventName() != logrecord.EventNameEvent {
				return
			}
			session, _ := res.Attributes().Get(semconv.SessionID)
			seq, _ := lr.Attributes().Get(semconv.EventSeq)
			first := eventKey{session.Str(), seq.Int()}
			last, ok := lastSeq[first]
			if !ok {
				t.Errorf("receiver record %v names no row of the log", first)
				return
			}
			if last < seedLength[first.session] {
				return // inherited: see TestPlacementAgrees
			}
			k := eventKey{first.session, last}
			want, ok := byEvent[k]
			if !ok {
				t.Errorf("event %v: the processor passed on no record of it", k)
				return
			}
			compared++
			if !lr.SpanID().IsEmpty() {
				placed++
			}
			if got, exp := placementOf(lr), placementOf(want); got != exp {
				typ, _ := lr.Attributes().Get(semconv.EventType)
				t.Errorf("%s seq %d: the receiver placed it at\n\t%s\nthe processor at\n\t%s", typ.Str(), k.seq, got, exp)
			}
		})
	}
	return compared, placed
}

// placementOf is a record's placement, as text.
func placementOf(lr plog.LogRecord) string {
	s := fmt.Sprintf("trace=%s span=%s", lr.TraceID(), lr.SpanID())
	for _, k := range placementKeys {
		if v, ok := lr.Attributes().Get(k); ok {
			s += fmt.Sprintf(" %s=%s", k, v.AsString())
		}
	}
	return s
}

// eachRecord calls fn for every record of ld with its resource.
func eachRecord(ld plog.Logs, fn func(pcommon.Resource, plog.LogRecord)) {
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		rl := ld.ResourceLogs().At(i)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			lrs := rl.ScopeLogs().At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				fn(rl.Resource(), lrs.At(k))
			}
		}
	}
}
