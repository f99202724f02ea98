package journal

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Kept are the records of one session in one batch, for the journal.
type Kept struct {
	header plog.Logs // the header record, if the batch had one
	recs   []keptRecord
}

type keptRecord struct {
	res    pcommon.Resource
	lr     plog.LogRecord
	maxSeq int64
	// client is the client that wrote the session: the journal's copy
	// names it, so that a restore (which has no request) keys it alike.
	client string
}

// KeepRecord files a decoded record under its session for the journal.
func KeepRecord(keep map[string]*Kept, rec logrecord.Record, res pcommon.Resource, lr plog.LogRecord) {
	k := keep[rec.SessionID]
	if k == nil {
		k = &Kept{header: plog.NewLogs()}
		keep[rec.SessionID] = k
	}
	if rec.Row.Kind == sessionlog.RowHeader {
		k.header = plog.NewLogs()
		rl := k.header.ResourceLogs().AppendEmpty()
		res.CopyTo(rl.Resource())
		c := rl.ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
		lr.CopyTo(c)
		nameClient(c, clientid.Client(rec.SessionID))
		return
	}
	if len(rec.Row.Events) == 0 {
		return
	}
	maxSeq := rec.Row.Events[0].Seq
	for i := range rec.Row.Events {
		maxSeq = max(maxSeq, rec.Row.Events[i].Seq)
	}
	k.recs = append(k.recs, keptRecord{res: res, lr: lr, maxSeq: maxSeq, client: clientid.Client(rec.SessionID)})
}

// from copies the records whose events reach seq retain or later into a
// new Logs, returning it and the highest seq in it.
func (k *Kept) from(retain int64) (plog.Logs, int64) {
	ld := plog.NewLogs()
	maxSeq := int64(-1)
	var lrs plog.LogRecordSlice
	var last pcommon.Resource
	haveLast := false
	for _, r := range k.recs {
		if r.maxSeq < retain {
			continue
		}
		if !haveLast || r.res != last {
			rl := ld.ResourceLogs().AppendEmpty()
			r.res.CopyTo(rl.Resource())
			lrs = rl.ScopeLogs().AppendEmpty().LogRecords()
			last, haveLast = r.res, true
		}
		c := lrs.AppendEmpty()
		r.lr.CopyTo(c)
		nameClient(c, r.client)
		maxSeq = max(maxSeq, r.maxSeq)
	}
	return ld, maxSeq
}

// nameClient puts the client on a journal copy of a record that names none
// (one read with the client of its request's context).
func nameClient(lr plog.LogRecord, client string) {
	if client == "" {
		return
	}
	if _, ok := lr.Attributes().Get(semconv.EnduserID); !ok {
		lr.Attributes().PutStr(semconv.EnduserID, client)
	}
}
