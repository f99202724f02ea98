package sessionevent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// HTTP API (docs/design.md §3):
//
//	POST /v1/sessions/{session_id}/events   NDJSON rows of one session
//	POST /v1/session-events                 self-describing wrapped lines
//
// 202 {"accepted":N,"duplicates":M}; 400 {"error","line","seq","code"} and
// nothing of the request accepted; 413 body or row too large; 415 content
// type; 503 + Retry-After when the pipeline refuses for now; 401 from the
// auth extension (confighttp).

const (
	pathSession = "POST /v1/sessions/{session_id}/events"
	pathLines   = "POST /v1/session-events"

	// maxSessionIDBytes bounds a session id taken from the path.
	maxSessionIDBytes = 1024
	// retryAfterSeconds is the Retry-After of a 503.
	retryAfterSeconds = "1"
)

// acceptedMediaTypes are the Content-Types a body may declare. NDJSON has
// several names in use; text/plain and curl's default for --data-binary
// (application/x-www-form-urlencoded, never parsed as a form) are accepted
// so `curl --data-binary @session.v4.jsonl URL` works as is; application/zstd,
// application/gzip and application/octet-stream for compressed uploads.
// Compression itself is recognized by Content-Encoding or the body's magic
// bytes, whatever the type says. A request without a Content-Type is taken
// as NDJSON.
var acceptedMediaTypes = map[string]bool{
	"application/x-ndjson":              true,
	"application/ndjson":                true,
	"application/jsonl":                 true,
	"application/x-jsonlines":           true,
	"application/jsonlines":             true,
	"application/json":                  true,
	"text/plain":                        true,
	"application/x-www-form-urlencoded": true,
	"application/zstd":                  true,
	"application/gzip":                  true,
	"application/octet-stream":          true,
}

func mediaTypeAccepted(ct string) bool {
	if strings.TrimSpace(ct) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && acceptedMediaTypes[mt]
}

// startHTTP starts the HTTP source when configured.
func (r *sessionReceiver) startHTTP(ctx context.Context, host component.Host) error {
	hc := r.cfg.HTTP.Get()
	if hc == nil {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc(pathSession, r.handleSession)
	mux.HandleFunc(pathLines, r.handleLines)
	srv, err := hc.ServerConfig.ToServer(ctx, host.GetExtensions(), r.set.TelemetrySettings, mux,
		confighttp.WithErrorHandler(jsonErrorHandler))
	if err != nil {
		return err
	}
	r.maxBody = hc.ServerConfig.MaxRequestBodySize // ToServer applied the default
	ln, err := hc.ServerConfig.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("session_event: listen on %s: %w", hc.ServerConfig.NetAddr.Endpoint, err)
	}
	r.srv = srv
	r.addr = ln.Addr()
	r.set.Logger.Info("Accepting dsh session events over HTTP", zap.String("endpoint", ln.Addr().String()))
	r.wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
	return nil
}

func (r *sessionReceiver) handleSession(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("session_id")
	if id == "" || len(id) > maxSessionIDBytes || !utf8.ValidString(id) || strings.ContainsFunc(id, isControl) {
		r.refuse(w, req.Context(), &reqError{status: http.StatusBadRequest, seq: -1, reason: "bad_session_id",
			msg: fmt.Sprintf("the session id in the path must be 1–%d bytes of UTF-8 without control characters", maxSessionIDBytes)}, 1)
		return
	}
	r.handle(w, req, parseOptions{endpoint: endpointSession, session: id})
}

func (r *sessionReceiver) handleLines(w http.ResponseWriter, req *http.Request) {
	r.handle(w, req, parseOptions{endpoint: endpointLines})
}

func isControl(c rune) bool { return c < 0x20 || c == 0x7f }

func (r *sessionReceiver) handle(w http.ResponseWriter, req *http.Request, o parseOptions) {
	ctx := req.Context()
	if ct := req.Header.Get("Content-Type"); !mediaTypeAccepted(ct) {
		r.refuse(w, ctx, &reqError{status: http.StatusUnsupportedMediaType, seq: -1, reason: "content_type",
			msg: fmt.Sprintf("unsupported Content-Type %q: send NDJSON (application/x-ndjson, application/jsonl, application/json, text/plain) "+
				"or a zstd/gzip body (application/zstd, application/gzip, application/octet-stream)", ct)}, 1)
		return
	}
	o.maxLine = r.cfg.MaxLineBytes
	o.maxBody = r.maxBody
	o.version = r.dedup.currentVersion
	pb, rerr := parseBody(req.Body, o)
	r.tel.BytesRead.Add(ctx, pb.bytes, r.attrHTTP)
	if rerr != nil {
		r.refuse(w, ctx, rerr, max(pb.rows, 1))
		return
	}
	accepted, dups, err := r.ingest(ctx, pb)
	if err != nil {
		var rerr *reqError
		if !errors.As(err, &rerr) {
			rerr = &reqError{status: http.StatusInternalServerError, msg: err.Error(), seq: -1, reason: "internal"}
		}
		r.refuse(w, ctx, rerr, max(pb.rows, 1))
		return
	}
	r.tel.RowsAccepted.Add(ctx, int64(accepted), r.attrHTTP)
	r.tel.RowsDuplicate.Add(ctx, int64(dups), r.attrHTTP)
	writeJSON(w, http.StatusAccepted, map[string]int{"accepted": accepted, "duplicates": dups})
}

// ingest delivers a judged request: rows already accepted are counted as
// duplicates, the others become records handed to the next consumer in one
// call; only when it succeeds are they remembered as accepted.
func (r *sessionReceiver) ingest(ctx context.Context, pb *parsedBody) (accepted, dups int, err error) {
	ids := pb.ids()
	unlock := r.dedup.lockSessions(ids)
	defer unlock()

	type mark struct {
		st      *sessionState
		version int
		a, b    int64
		header  bool
	}
	var marks []mark
	type adoption struct {
		st      *sessionState
		version int
	}
	var adopted []adoption
	states := make([]*sessionState, 0, len(pb.sessions))
	saved := map[string]logrecord.Position{}
	ld := plog.NewLogs()
	now := r.now()

	for _, s := range pb.sessions {
		st, loaded, evicted := r.dedup.session(ctx, s.id)
		states = append(states, st)
		r.trackerMu.Lock()
		for _, id := range evicted {
			r.tracker.Restore(id, logrecord.Position{})
		}
		if !loaded.IsZero() {
			r.tracker.Restore(s.id, loaded)
		}
		r.trackerMu.Unlock()
	}

	r.trackerMu.Lock()
	for i, s := range pb.sessions {
		st := states[i]
		saved[s.id] = r.tracker.Save(s.id)
		version := st.version()
		f := s.dec.Format()
		// Rows posted before the session showed any header were keyed by an
		// unknown version; the first header adopts them as its own.
		adopt := false
		if s.header != nil {
			version = f.Version
			adopt = st.version() == unknownVersion && st.gens[unknownVersion] != nil
		}
		gen, prior := st.gens[version], st.gens[unknownVersion]
		seen := func(a, b int64) bool {
			return gen != nil && gen.contains(a, b) || adopt && prior.contains(a, b)
		}
		if adopt {
			adopted = append(adopted, adoption{st, version})
		}
		var lrs plog.LogRecordSlice
		hasLRS := false
		appendRow := func(row *sessionlog.Row) {
			if !hasLRS {
				lrs, hasLRS = logrecord.NewResourceLogs(ld, s.id, nil), true
			}
			r.tracker.Append(lrs, s.id, row, f, now)
			accepted++
		}
		if s.header != nil {
			if gen != nil && gen.Header || adopt && prior.Header {
				dups++
			} else {
				appendRow(s.header)
			}
			marks = append(marks, mark{st: st, version: version, header: true})
		}
		dups += s.dups
		for _, row := range s.rows {
			a, b := firstSeq(row), lastSeq(row)
			if seen(a, b) {
				dups++
				continue
			}
			appendRow(row)
			marks = append(marks, mark{st: st, version: version, a: a, b: b})
		}
	}
	r.trackerMu.Unlock()

	if accepted > 0 {
		opCtx := r.obs[transportHTTP].StartLogsOp(ctx)
		err = r.next.ConsumeLogs(opCtx, ld)
		r.obs[transportHTTP].EndLogsOp(opCtx, "jsonl", accepted, err)
		if err != nil {
			r.trackerMu.Lock()
			for id, p := range saved {
				r.tracker.Restore(id, p)
			}
			r.trackerMu.Unlock()
			if consumererror.IsPermanent(err) {
				return 0, 0, &reqError{status: http.StatusBadRequest, seq: -1, reason: "downstream_permanent",
					msg: "the pipeline refused the rows permanently: " + err.Error()}
			}
			return 0, 0, &reqError{status: http.StatusServiceUnavailable, seq: -1, reason: "downstream_retryable",
				msg: "the pipeline cannot take the rows now, retry later: " + err.Error()}
		}
	}
	// Delivered: remember what was accepted.
	var abandoned int64
	for _, a := range adopted {
		if prior := a.st.gens[unknownVersion]; prior != nil {
			abandoned += a.st.gen(a.version).merge(prior)
			delete(a.st.gens, unknownVersion)
		}
	}
	for _, m := range marks {
		g := m.st.gen(m.version)
		if m.header {
			g.Header = true
			m.st.current.Store(int64(max(m.st.version(), m.version)))
			continue
		}
		abandoned += g.add(m.a, m.b)
	}
	if abandoned > 0 {
		r.set.Logger.Debug("Dedup state full: gave up waiting for missing seqs", zap.Int64("seqs", abandoned))
	}
	if accepted > 0 || len(marks) > 0 {
		// Not cancelled with the request: the rows are delivered, their
		// state must be written even if the client went away.
		if perr := r.dedup.persist(context.WithoutCancel(ctx), states, r.savePosition); perr != nil {
			// Delivered already; only a restart could now emit these rows again.
			r.set.Logger.Warn("Could not persist the dedup state", zap.Error(perr))
		}
	}
	return accepted, dups, nil
}

func (r *sessionReceiver) restorePosition(id string, p logrecord.Position) {
	r.trackerMu.Lock()
	defer r.trackerMu.Unlock()
	r.tracker.Restore(id, p)
}

func (r *sessionReceiver) savePosition(id string) logrecord.Position {
	r.trackerMu.Lock()
	defer r.trackerMu.Unlock()
	return r.tracker.Save(id)
}

// refuse answers a refused request and counts its rows as rejected (the
// rows read up to the refusal, at least one per request).
func (r *sessionReceiver) refuse(w http.ResponseWriter, ctx context.Context, e *reqError, rows int) {
	if rows > 0 {
		r.tel.RowsRejected.Add(ctx, int64(rows), metric.WithAttributes(
			attribute.String("transport", transportHTTP), attribute.String("reason", e.reason)))
	}
	if e.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	body := map[string]any{"error": e.msg}
	if e.line > 0 {
		body["line"] = e.line
	}
	if e.seq >= 0 {
		body["seq"] = e.seq
	} else if e.line > 0 {
		body["seq"] = nil
	}
	if e.code != "" {
		body["code"] = e.code
	}
	r.set.Logger.Debug("Refused a session event request", zap.Int("status", e.status), zap.String("error", e.msg))
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// jsonErrorHandler answers confighttp's own refusals (auth, unsupported
// Content-Encoding, undecodable compressed body) in our JSON shape.
func jsonErrorHandler(w http.ResponseWriter, _ *http.Request, msg string, status int) {
	writeJSON(w, status, map[string]any{"error": msg})
}
