package sessionarchive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/archive"
	"github.com/dshtrace/dshtrace/exporter/sessionarchive/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Reasons a record is not archived (records_dropped).
const (
	reasonNotSession  = "not_session"
	reasonInvalid     = "invalid"
	reasonUnsupported = "unsupported"
)

// archiveExporter adapts the archive to the collector: it reads the log
// records of the session_event contract (docs/design.md §3) back into rows and
// hands them to the archive, and gives up on what waited too long in the
// background.
type archiveExporter struct {
	cfg    *Config
	logger *zap.Logger
	tel    *metadata.Telemetry

	// mu serializes the archive and the record reader.
	mu     sync.Mutex
	arc    *archive.Archive
	reader *logrecord.Reader
	root   string

	stop, done chan struct{}

	sessionsOpen, rowsPending atomic.Int64
}

func newArchiveExporter(cfg *Config, set exporter.Settings) (*archiveExporter, error) {
	e := &archiveExporter{cfg: cfg, logger: set.Logger}
	tel, err := metadata.NewTelemetry(set.TelemetrySettings, metadata.Gauges{
		SessionsOpen: e.sessionsOpen.Load,
		RowsPending:  e.rowsPending.Load,
	})
	if err != nil {
		return nil, err
	}
	e.tel = tel
	return e, nil
}

// roots are the archive roots in use in this process: two exporters
// appending to the same files would interleave rows.
var roots = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

func (e *archiveExporter) start(_ context.Context, _ component.Host) error {
	root, err := e.cfg.rootDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("archive root: %w", err)
	}
	roots.Lock()
	defer roots.Unlock()
	if roots.m[root] {
		return fmt.Errorf("archive root %s is already written by another session_archive exporter", root)
	}
	opts := e.cfg.archiveOptions(root)
	opts.Observer = observer{e.tel}
	opts.Logger = e.logger
	arc, err := archive.New(opts)
	if err != nil {
		return err
	}
	roots.m[root] = true
	e.mu.Lock()
	e.arc, e.root = arc, root
	e.reader = logrecord.NewReader(e.cfg.MaxSessions)
	e.mu.Unlock()
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	go e.sweep(sweepInterval(e.cfg.PendingTimeout))
	return nil
}

// sweepInterval checks for timed-out waits a few times per pending_timeout.
func sweepInterval(timeout time.Duration) time.Duration {
	return min(max(timeout/4, 10*time.Millisecond), time.Second)
}

func (e *archiveExporter) sweep(every time.Duration) {
	defer close(e.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.mu.Lock()
			if err := e.arc.Sweep(now); err != nil {
				e.logger.Warn("Could not write rows held past pending_timeout; retrying", zap.Error(err))
			}
			e.gauges()
			e.mu.Unlock()
		}
	}
}

func (e *archiveExporter) shutdown(context.Context) error {
	if e.stop != nil {
		close(e.stop)
		<-e.done
		e.stop = nil
	}
	var errs []error
	e.mu.Lock()
	if e.arc != nil {
		errs = append(errs, e.arc.Close(time.Now()))
		e.arc = nil
		roots.Lock()
		delete(roots.m, e.root)
		roots.Unlock()
	}
	e.gauges()
	e.mu.Unlock()
	errs = append(errs, e.tel.Shutdown())
	return errors.Join(errs...)
}

func (e *archiveExporter) gauges() {
	if e.arc == nil {
		e.sessionsOpen.Store(0)
		e.rowsPending.Store(0)
		return
	}
	e.sessionsOpen.Store(int64(e.arc.Sessions()))
	e.rowsPending.Store(int64(e.arc.Pending()))
}

// push archives a batch. Its error is an I/O failure: exporterhelper
// retries the batch, and the rows already written come back as duplicates.
func (e *archiveExporter) push(ctx context.Context, ld plog.Logs) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.arc == nil {
		return errors.New("session_archive exporter is not started")
	}
	rows := e.rows(ctx, ld)
	err := e.arc.Add(rows, time.Now())
	e.gauges()
	return err
}

// rows reads the batch's records back into archive rows.
func (e *archiveExporter) rows(ctx context.Context, ld plog.Logs) []archive.Row {
	// The sessions of records that name no client are the request's
	// client's (an authenticated receiver's context).
	e.reader.SetClient(logrecord.ClientFromContext(ctx))
	var rows []archive.Row
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		rl := rls.At(i)
		sls := rl.ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				rec, err := e.reader.Read(rl.Resource(), lr)
				if err != nil {
					e.drop(ctx, readReason(err), err)
					continue
				}
				if r, reason := toRow(rec, lr); reason != "" {
					e.drop(ctx, reason, fmt.Errorf("session %s: %s record", rec.SessionID, rec.Row.Kind))
				} else {
					rows = append(rows, r)
				}
			}
		}
	}
	return rows
}

func readReason(err error) string {
	var uv *sessionlog.UnsupportedVersionError
	switch {
	case errors.Is(err, logrecord.ErrNotSession):
		return reasonNotSession
	case errors.As(err, &uv):
		return reasonUnsupported
	}
	return reasonInvalid
}

func (e *archiveExporter) drop(ctx context.Context, reason string, err error) {
	e.logger.Debug("Record not archived", zap.String("reason", reason), zap.Error(err))
	e.tel.RecordsDropped.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

// toRow turns a record read back into the row to archive, or names why it
// cannot be archived. A bare row (a file's, or a POSTed one) is written
// exactly as received; a wrapped row of a live transport becomes its
// logical event, since a session file holds bare events.
func toRow(rec logrecord.Record, lr plog.LogRecord) (archive.Row, string) {
	row := rec.Row
	switch row.Kind {
	case sessionlog.RowHeader:
		if row.Header == nil {
			return archive.Row{}, reasonInvalid
		}
		return archive.Row{Session: rec.SessionID, Header: true, Version: row.Header.Version, Cwd: row.Header.Cwd,
			Lines: [][]byte{row.Bytes}}, ""
	case sessionlog.RowEvent, sessionlog.RowPacked:
	default:
		return archive.Row{}, reasonInvalid
	}
	if len(row.Events) == 0 {
		return archive.Row{}, reasonInvalid
	}
	if rec.Origin == logrecord.OriginDshV0 {
		// dsh v0's export rebuilds events from data and keeps one chunk per
		// step: neither the row's bytes nor a dense log to archive.
		return archive.Row{}, reasonUnsupported
	}
	r := archive.Row{
		Session: rec.SessionID,
		First:   row.Events[0].Seq,
		Last:    row.Events[len(row.Events)-1].Seq,
		Packed:  row.Kind == sessionlog.RowPacked,
		Live:    row.Wrapper != sessionlog.WrapNone || rec.Origin == logrecord.OriginDshV4,
	}
	if row.Wrapper == sessionlog.WrapNone {
		r.Lines = [][]byte{row.Bytes}
	} else {
		for i := range row.Events {
			b := row.Events[i].LogicalJSON()
			if b == nil {
				return archive.Row{}, reasonInvalid
			}
			r.Lines = append(r.Lines, b)
		}
	}
	if v, ok := lr.Attributes().Get(logrecord.AttrFormatVersion); ok && v.Type() == pcommon.ValueTypeInt {
		r.Version, r.HasVersion = int(v.Int()), true
	}
	if f := rec.Format; f.Known && !f.FromHeader {
		r.Inferred, r.HasInferred = f.RulesVersion(), true
	}
	return r, ""
}

// observer feeds the archive's counts to the self-telemetry.
type observer struct{ t *metadata.Telemetry }

func (o observer) Written(rows, bytes int64) {
	ctx := context.Background()
	o.t.RowsWritten.Add(ctx, rows)
	o.t.BytesWritten.Add(ctx, bytes)
}

func (o observer) FileCreated() { o.t.FilesCreated.Add(context.Background(), 1) }

func (o observer) Duplicates(rows int64) { o.t.DuplicatesSkipped.Add(context.Background(), rows) }

func (o observer) GaveUp(cause string, skipped int64) {
	attrs := metric.WithAttributes(attribute.String("cause", cause))
	o.t.GiveUps.Add(context.Background(), 1, attrs)
	if skipped > 0 {
		o.t.SeqsSkipped.Add(context.Background(), skipped, attrs)
	}
}

func (o observer) Dropped(reason string, rows int64) {
	o.t.RecordsDropped.Add(context.Background(), rows, metric.WithAttributes(attribute.String("reason", reason)))
}
