package httpsource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// TestCrossOriginRefused: a request a web page of another origin sent —
// its Origin not the receiver's, or Sec-Fetch-Site cross-site or
// same-site — is refused with 403 naming the header and the key that
// would allow it, before its body is read, even as a "simple" request
// (text/plain, curl's form type) that needs no preflight; requests without
// those headers (curl, dsh, the SDKs) and the receiver's own origin pass.
func TestCrossOriginRefused(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := startSource(t, sink, nil)
	own := "http://" + s.Addr().String()
	for _, c := range []struct {
		name    string
		headers []string
		status  int
		says    string
	}{
		{"no browser headers", nil, http.StatusAccepted, ""},
		{"own origin", []string{"Origin", own, "Sec-Fetch-Site", "same-origin"}, http.StatusAccepted, ""},
		{"typed by hand", []string{"Sec-Fetch-Site", "none"}, http.StatusAccepted, ""},
		{"another site", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, `Origin "https://evil.example" is not this receiver's; list its origin in http::cors::allowed_origins`},
		{"another site, Origin only", []string{"Origin", "https://evil.example"}, http.StatusForbidden, `Origin "https://evil.example"`},
		{"another port of localhost", []string{"Origin", "http://localhost:3000"}, http.StatusForbidden, `Origin "http://localhost:3000"`},
		{"https of the same host", []string{"Origin", "https://" + s.Addr().String()}, http.StatusForbidden, "is not this receiver's"},
		{"sandboxed page", []string{"Origin", "null"}, http.StatusForbidden, `Origin "null"`},
		{"cross-site without Origin", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden, "Sec-Fetch-Site is cross-site"},
		{"same-site", []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden, "Sec-Fetch-Site is same-site"},
	} {
		for k, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/x-ndjson"} {
			t.Run(c.name+"/"+ct, func(t *testing.T) {
				before := sink.LogRecordCount()
				row := rowsOf(1)
				status, _, body := send(t, s, fmt.Sprintf("origin-%d", k), bytes.NewReader(row), int64(len(row)), append([]string{"Content-Type", ct}, c.headers...)...)
				require.Equal(t, c.status, status, body)
				if c.status == http.StatusForbidden {
					var refusal struct{ Error string }
					require.NoError(t, json.Unmarshal([]byte(body), &refusal))
					assert.Contains(t, refusal.Error, "cross-origin request refused")
					assert.Contains(t, refusal.Error, c.says)
					assert.Equal(t, before, sink.LogRecordCount(), "nothing of a refused request is delivered")
				}
			})
		}
	}
}

// TestCrossOriginAllowedByCORS: with http::cors::allowed_origins set, the
// origins it lists (wildcards as confighttp's CORS handler matches them)
// may post, preflight answered; any other is still refused.
func TestCrossOriginAllowedByCORS(t *testing.T) {
	s := startSource(t, consumertest.NewNop(), func(s *Source) {
		s.cfg.ServerConfig.CORS = configoptional.Some(confighttp.CORSConfig{
			AllowedOrigins: []string{"https://app.example", "https://*.dev.example"},
			AllowedHeaders: []string{"Content-Type"},
		})
	})
	row := rowsOf(1)
	for origin, want := range map[string]int{
		"https://app.example":     http.StatusAccepted,
		"https://one.dev.example": http.StatusAccepted,
		"https://evil.example":    http.StatusForbidden,
	} {
		status, _, body := send(t, s, "cors", bytes.NewReader(row), int64(len(row)),
			"Content-Type", "application/x-ndjson", "Origin", origin, "Sec-Fetch-Site", "cross-site")
		assert.Equal(t, want, status, "%s: %s", origin, body)
	}
	req, err := http.NewRequest(http.MethodOptions, "http://"+s.Addr().String()+"/v1/sessions/cors/events", http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", http.MethodPost)
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	res, err := client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, "https://app.example", res.Header.Get("Access-Control-Allow-Origin"), "preflight answered")
}

// TestContentTypes: the Content-Types each documented client sends are
// accepted, others refused with 415 naming the type.
func TestContentTypes(t *testing.T) {
	s := startSource(t, consumertest.NewNop(), nil)
	for ct, want := range map[string]int{
		"":                                  http.StatusAccepted, // Go's and other HTTP libraries' default
		"application/x-ndjson":              http.StatusAccepted, // README examples, bench/load, e2e, demo.sh
		"application/ndjson":                http.StatusAccepted,
		"application/jsonl":                 http.StatusAccepted,
		"application/x-jsonlines":           http.StatusAccepted,
		"application/jsonlines":             http.StatusAccepted,
		"application/json":                  http.StatusAccepted,
		"text/plain; charset=utf-8":         http.StatusAccepted,
		"application/x-www-form-urlencoded": http.StatusAccepted, // curl --data-binary without -H
		"application/octet-stream":          http.StatusAccepted,
		"multipart/form-data; boundary=x":   http.StatusUnsupportedMediaType,
		"text/html":                         http.StatusUnsupportedMediaType,
		"application/xml":                   http.StatusUnsupportedMediaType,
	} {
		row := rowsOf(1)
		headers := []string{}
		if ct != "" {
			headers = []string{"Content-Type", ct}
		}
		status, _, body := send(t, s, "ct", bytes.NewReader(row), int64(len(row)), headers...)
		assert.Equal(t, want, status, "%q: %s", ct, body)
		if want == http.StatusUnsupportedMediaType {
			assert.Contains(t, body, "unsupported Content-Type")
		}
	}
}
