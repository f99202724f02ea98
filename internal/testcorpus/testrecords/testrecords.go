// Package testrecords builds, for tests, the log records the session_event
// receiver would emit for a session log — the input the turn_state
// connector and processor read.
package testrecords

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Receiver turns the log at path into records the way the receiver does
// (logrecord.Tracker over the decoded rows, observed at observed): one
// ResourceLogs per session, in the order sessions first appear; rows that
// name no session are filed under fallback. It also returns the number of
// logical events.
func Receiver(t testing.TB, path, fallback string, observed time.Time) (plog.Logs, int) {
	t.Helper()
	ld := plog.NewLogs()
	bySession := map[string]plog.LogRecordSlice{}
	tr := logrecord.NewTracker(turnmodel.DefaultBounds())
	events := 0
	for _, r := range testlog.Rows(t, path, fallback) {
		lrs, ok := bySession[r.Session]
		if !ok {
			lrs = logrecord.NewResourceLogs(ld, "github.com/dshtrace/dshtrace/receiver/sessionevent", r.Session, nil)
			bySession[r.Session] = lrs
		}
		tr.Append(lrs, r.Session, r.Row, r.Format, observed)
		events += len(r.Events)
	}
	return ld, events
}
