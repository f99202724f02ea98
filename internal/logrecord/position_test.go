package logrecord

import (
	"encoding/json"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/plogtest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// TestPositionSaveRestore: batches whose delivery failed are undone with
// Restore, then appended again — through a JSON round trip of the saved
// position, as a restarted receiver would — and the records equal those of
// one uninterrupted pass, trace and span ids included.
func TestPositionSaveRestore(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		rel := l.Name
		rows := testlog.Rows(t, l.Path, "s")
		const session = "s"

		want := plog.NewLogs()
		lrs := NewResourceLogs(want, testScope, session, nil)
		tr := NewTracker(turnmodel.DefaultBounds())
		for _, r := range rows {
			tr.Append(lrs, session, r.Row, r.Format, now)
		}

		got := plog.NewLogs()
		glrs := NewResourceLogs(got, testScope, session, nil)
		tr = NewTracker(turnmodel.DefaultBounds())
		for start := 0; start < len(rows); start += 7 {
			batch := rows[start:min(start+7, len(rows))]
			saved := tr.Save(session)
			// A failed delivery: appended, then undone.
			scratch := plog.NewLogRecordSlice()
			for _, r := range batch {
				tr.Append(scratch, session, r.Row, r.Format, now)
			}
			tr.Restore(session, saved)
			// A restart in between: the position comes back from JSON.
			b, err := json.Marshal(tr.Save(session))
			if err != nil {
				t.Fatal(err)
			}
			var back Position
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			tr = NewTracker(turnmodel.DefaultBounds())
			tr.Restore(session, back)
			for _, r := range batch {
				tr.Append(glrs, session, r.Row, r.Format, now)
			}
		}
		if err := plogtest.CompareLogs(want, got); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// TestPositionForget: restoring the zero Position forgets the session.
func TestPositionForget(t *testing.T) {
	tr := NewTracker(turnmodel.Bounds{MaxSessions: 2})
	if !tr.Save("a").IsZero() {
		t.Fatal("unknown session has a position")
	}
	row := &sessionlog.Row{Kind: sessionlog.RowEvent, Bytes: []byte(`{}`)}
	row.Events = []sessionlog.Event{{Row: row, Type: "turn/start", Seq: 0, Turn: 1, HasTurn: true, Detail: &sessionlog.Detail{}}}
	tr.Append(plog.NewLogRecordSlice(), "a", row, sessionlog.Format{}, now)
	if tr.Save("a").IsZero() {
		t.Fatal("no position after an append")
	}
	tr.Restore("a", Position{})
	if !tr.Save("a").IsZero() || tr.table.Len() != 0 {
		t.Fatalf("session not forgotten: %d sessions held", tr.table.Len())
	}
	b, _ := json.Marshal(Position{})
	if string(b) != "null" {
		t.Fatalf("zero position marshals to %s", b)
	}
}

// TestTrackerForgetsLeastRecentlyUsed: at its bound the Tracker forgets the
// session used least recently, not the one added first.
func TestTrackerForgetsLeastRecentlyUsed(t *testing.T) {
	tr := NewTracker(turnmodel.Bounds{MaxSessions: 2})
	appendStart := func(id string) {
		row := &sessionlog.Row{Kind: sessionlog.RowEvent, Bytes: []byte(`{}`)}
		row.Events = []sessionlog.Event{{Row: row, Type: "turn/start", Seq: 0, Turn: 1, HasTurn: true, Detail: &sessionlog.Detail{}}}
		tr.Append(plog.NewLogRecordSlice(), id, row, sessionlog.Format{}, now)
	}
	appendStart("a")
	appendStart("b")
	appendStart("a") // a is now the most recently used
	appendStart("c")
	if tr.Save("a").IsZero() || tr.Save("c").IsZero() {
		t.Fatal("a recently used session was forgotten")
	}
	if !tr.Save("b").IsZero() {
		t.Fatal("the least recently used session is still held")
	}
}
