package httpsource

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
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/storageclient"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

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

// Start loads the dedup state from the storage extension, if one is
// configured, and starts serving. It does not block.
func (h *Source) Start(ctx context.Context, host component.Host) error {
	h.tel.StateWritesWatched(ctx)
	if h.cfg.Storage != nil {
		c, err := storageclient.Open(ctx, host, *h.cfg.Storage, component.KindReceiver, h.set.ID, "http", metadata.Type.String())
		if err != nil {
			return err
		}
		h.client = c
		if err := h.dedup.Load(ctx, c, h.restorePosition); err != nil {
			return fmt.Errorf("session_event: load the dedup state: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc(pathSession, h.handleSession)
	mux.HandleFunc(pathLines, h.handleLines)
	opts := []confighttp.ToServerOption{confighttp.WithErrorHandler(jsonErrorHandler)}
	if h.cfg.zstdEnabled() {
		opts = append(opts, confighttp.WithDecoder("zstd", zstdPassthrough))
	}
	srv, err := h.cfg.ServerConfig.ToServer(ctx, host.GetExtensions(), h.set.TelemetrySettings, mux, opts...)
	if err != nil {
		return err
	}
	h.maxBody = h.cfg.ServerConfig.MaxRequestBodySize // ToServer applied the default
	ln, err := h.cfg.ServerConfig.ToListener(ctx)
	if err != nil {
		return fmt.Errorf("session_event: listen on %s: %w", h.cfg.ServerConfig.NetAddr.Endpoint, err)
	}
	h.srv = srv
	h.addr = ln.Addr()
	h.admission = newAdmission(h.cfg.MaxBytesInFlight)
	h.origins = newOriginCheck(h.cfg)
	h.set.Logger.Info("Accepting dsh session events over HTTP", zap.String("endpoint", ln.Addr().String()))
	h.wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
		}
	})
	return nil
}

// Shutdown stops the server, letting requests in flight finish (each
// either delivers and commits, or rolls back), then closes the storage
// client. It is safe without Start.
func (h *Source) Shutdown(ctx context.Context) error {
	var errs []error
	if h.srv != nil {
		if err := h.srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	h.wg.Wait() // Serve returns as soon as Shutdown closed the listener
	if h.admission != nil {
		h.admission.shutdown()
		h.admission = nil
	}
	if h.client != nil {
		if err := h.client.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		h.client = nil
	}
	return errors.Join(errs...)
}

func (h *Source) handleSession(w http.ResponseWriter, req *http.Request) {
	id := req.PathValue("session_id")
	if id == "" || len(id) > maxSessionIDBytes || !utf8.ValidString(id) || strings.ContainsFunc(id, isControl) {
		h.refuse(w, req.Context(), &reqError{status: http.StatusBadRequest, seq: -1, reason: "bad_session_id",
			msg: fmt.Sprintf("the session id in the path must be 1–%d bytes of UTF-8 without control characters", maxSessionIDBytes)}, 1)
		return
	}
	h.handle(w, req, parseOptions{endpoint: endpointSession, session: id})
}

func (h *Source) handleLines(w http.ResponseWriter, req *http.Request) {
	h.handle(w, req, parseOptions{endpoint: endpointLines})
}

func isControl(c rune) bool { return c < 0x20 || c == 0x7f }

// handle answers one request: who sent it (a web page of another origin
// is refused), its Content-Type, then its admission (a share of
// max_bytes_in_flight), then its body parsed and judged whole (parseBody),
// then ingested.
func (h *Source) handle(w http.ResponseWriter, req *http.Request, o parseOptions) {
	ctx := req.Context()
	if rerr := h.origins.refusal(req); rerr != nil {
		h.refuse(w, ctx, rerr, 1)
		return
	}
	if ct := req.Header.Get("Content-Type"); !mediaTypeAccepted(ct) {
		h.refuse(w, ctx, &reqError{status: http.StatusUnsupportedMediaType, seq: -1, reason: "content_type",
			msg: fmt.Sprintf("unsupported Content-Type %q: send NDJSON (application/x-ndjson, application/jsonl, application/json, text/plain) "+
				"or a zstd/gzip body (application/zstd, application/gzip, application/octet-stream)", ct)}, 1)
		return
	}
	t := h.admission.admit()
	if t == nil {
		h.refuse(w, ctx, overCapacity(h.admission.limit), 1)
		return
	}
	defer t.done()
	o.ticket = t
	o.encoding = req.Header.Get("Content-Encoding")
	o.maxLine = h.maxLine
	o.maxBody = h.maxBody
	o.client = logrecord.ClientFromContext(ctx)
	o.version = h.dedup.CurrentVersion
	pb, rerr := parseBody(req.Body, o)
	defer pb.release() // the rows are done with once the request is answered, before t.done
	h.tel.BytesRead(ctx, pb.bytes)
	if rerr != nil {
		h.refuse(w, ctx, rerr, max(pb.rows, 1))
		return
	}
	accepted, dups, err := h.ingest(ctx, pb)
	if err != nil {
		var rerr *reqError
		if !errors.As(err, &rerr) {
			rerr = &reqError{status: http.StatusInternalServerError, msg: err.Error(), seq: -1, reason: "internal"}
		}
		h.refuse(w, ctx, rerr, max(pb.rows, 1))
		return
	}
	h.tel.RowsAccepted(ctx, int64(accepted))
	h.tel.RowsDuplicate(ctx, int64(dups))
	writeJSON(w, http.StatusAccepted, map[string]int{"accepted": accepted, "duplicates": dups})
}

// refuse answers a refused request and counts its rows as rejected (the
// rows read up to the refusal, at least one per request).
func (h *Source) refuse(w http.ResponseWriter, ctx context.Context, e *reqError, rows int) {
	if rows > 0 {
		h.tel.RowsRejected(ctx, int64(rows), e.reason)
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
	h.set.Logger.Debug("Refused a session event request", zap.Int("status", e.status), zap.String("error", e.msg))
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
