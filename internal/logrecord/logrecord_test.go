package logrecord

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

var now = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// build turns a log file into records the way the receiver does.
func build(t *testing.T, path, session string) plog.Logs {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := sessionlog.NewDecoder(f, sessionlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	ld := plog.NewLogs()
	bySession := map[string]plog.LogRecordSlice{}
	tr := NewTracker(turnmodel.DefaultBounds())
	for {
		row, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return ld
		}
		if err != nil {
			t.Fatal(err)
		}
		// As the receiver does: a wrapped row names its session, a file's
		// header names the file's.
		id := row.SessionID
		if row.Wrapper == sessionlog.WrapNone {
			id = session
			if h := dec.Header(); h != nil {
				id = h.ID
			}
		}
		lrs, ok := bySession[id]
		if !ok {
			lrs = NewResourceLogs(ld, testScope, id, nil)
			bySession[id] = lrs
		}
		tr.Append(lrs, id, row, dec.Format(), now)
	}
}

// feed reads records back and runs them through a fresh engine.
func feed(t *testing.T, ld plog.Logs) ptrace.Traces {
	t.Helper()
	e := turnengine.New(turnengine.Config{})
	rd := NewReader(0)
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		lrs := rl.ScopeLogs().At(0).LogRecords()
		for j := 0; j < lrs.Len(); j++ {
			rec, err := rd.Read(rl.Resource(), lrs.At(j))
			if err != nil {
				t.Fatal(err)
			}
			for k := range rec.Row.Events {
				e.Ingest(turnengine.Input{SessionID: rec.SessionID, Event: &rec.Row.Events[k], Format: rec.Format,
					Header: rec.Header, Gappy: rec.Origin == OriginDshV0}, now)
			}
		}
	}
	e.Flush(turnengine.CauseEndOfInput, now)
	return turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", e.Drain())
}

func replay(t *testing.T, path, session string) ptrace.Traces {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e := turnengine.New(turnengine.Config{})
	if err := turnengine.Replay(e, f, sessionlog.Options{}, session, now); err != nil {
		t.Fatal(err)
	}
	return turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", e.Drain())
}

// For every corpus file: one record per physical row, each Body byte-equal
// to its row; read back, the records give exactly the spans of the direct
// path; and every record's trace and span ids name a span of that output.
func TestCorpusRoundTrip(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		rel, path := l.Name, l.Path
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Files name their session in the header; wrapped streams per line.
		ld := build(t, path, "s")
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		lines := splitLines(raw)
		if lrs.Len() > len(lines) {
			t.Fatalf("%s: %d records for %d lines", rel, lrs.Len(), len(lines))
		}
		bodies := map[string]bool{}
		for _, l := range lines {
			bodies[string(l)] = true
		}
		for j := 0; j < lrs.Len(); j++ {
			if !bodies[lrs.At(j).Body().Str()] {
				t.Fatalf("%s: record %d body is not a row of the file", rel, j)
			}
		}
		want := replay(t, path, "s")
		got := feed(t, ld)
		if err := ptracetest.CompareTraces(want, got, ptracetest.IgnoreResourceSpansOrder()); err != nil {
			t.Errorf("%s: records give other spans than the file: %v", rel, err)
			continue
		}
		spans := map[pcommon.SpanID]pcommon.TraceID{}
		rss := got.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			ss := rss.At(i).ScopeSpans().At(0).Spans()
			for k := 0; k < ss.Len(); k++ {
				spans[ss.At(k).SpanID()] = ss.At(k).TraceID()
			}
		}
		seedLength := int64(-1)
		if h := headerOf(t, path); h != nil && h.HasSeedLength {
			seedLength = h.SeedLength
		}
		for j := 0; j < lrs.Len(); j++ {
			lr := lrs.At(j)
			if lr.SpanID().IsEmpty() {
				continue
			}
			if seq, _ := lr.Attributes().Get(AttrEventSeq); seq.Int() < seedLength {
				// Inherited from the parent: the parent's spans, not emitted here.
				h := headerOf(t, path)
				if turn, _ := lr.Attributes().Get(semconv.DshTurn); lr.TraceID() != turnrender.TraceID(h.ParentSession, turn.Int()) {
					t.Errorf("%s: inherited seq %d does not name its parent's trace", rel, seq.Int())
				}
				continue
			}
			tr, ok := spans[lr.SpanID()]
			if !ok {
				typ, _ := lr.Attributes().Get(AttrEventType)
				seq, _ := lr.Attributes().Get(AttrEventSeq)
				t.Errorf("%s: record %s seq %d names span %s, which was not emitted", rel, typ.Str(), seq.Int(), lr.SpanID())
				continue
			}
			if tr != lr.TraceID() {
				t.Errorf("%s: record %d trace id differs from its span's", rel, j)
			}
		}
	}
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

func headerOf(t *testing.T, path string) *sessionlog.Header {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := sessionlog.Check(f, sessionlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Header
}

// testScope is the scope the receiver gives its records.
const testScope = "github.com/dshtrace/dshtrace/receiver/sessionevent"
