package httpsource

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/rs/cors"
)

// Requests from web pages. A page of any site may POST to a collector on
// the developer's loopback without a CORS preflight when it sends a
// "simple" request — a Content-Type of text/plain,
// application/x-www-form-urlencoded or multipart/form-data, or none — and
// the receiver accepts such types for curl's sake (curl --data-binary sends
// application/x-www-form-urlencoded). What tells the page's request apart
// is what the browser adds to it: an Origin header naming the page's
// origin, and Sec-Fetch-Site. A request whose Origin is not the receiver's
// own, or whose Sec-Fetch-Site says another origin sent it, is refused
// unless http::cors lists its origin; clients that are not browsers send
// neither header.

// originCheck decides which origins may post.
type originCheck struct {
	// allowed matches http::cors::allowed_origins as confighttp's CORS
	// handler does; nil: none configured.
	allowed *cors.Cors
}

func newOriginCheck(c Config) originCheck {
	if cc := c.ServerConfig.CORS.Get(); cc != nil && len(cc.AllowedOrigins) > 0 {
		return originCheck{allowed: cors.New(cors.Options{AllowedOrigins: cc.AllowedOrigins})}
	}
	return originCheck{}
}

// refusal is why req, sent by a web page of another origin, is refused;
// nil when it may be read.
func (o originCheck) refusal(req *http.Request) *reqError {
	origin := req.Header.Get("Origin")
	if origin != "" && o.allowed != nil && o.allowed.OriginAllowed(req) {
		return nil
	}
	hint := "list its origin in http::cors::allowed_origins to accept it"
	if origin != "" && !sameOrigin(origin, req) {
		return forbidden(fmt.Sprintf("cross-origin request refused: Origin %q is not this receiver's; %s", origin, hint))
	}
	switch site := strings.ToLower(strings.TrimSpace(req.Header.Get("Sec-Fetch-Site"))); site {
	case "cross-site", "same-site":
		return forbidden(fmt.Sprintf("cross-origin request refused: Sec-Fetch-Site is %s (a web page of another origin sent it); %s", site, hint))
	}
	return nil
}

func forbidden(msg string) *reqError {
	return &reqError{status: http.StatusForbidden, seq: -1, reason: "cross_origin", msg: msg}
}

// sameOrigin reports whether origin (scheme://host[:port]) is the
// receiver's own as the request reached it: its scheme, host and port.
func sameOrigin(origin string, req *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" || u.User != nil {
		return false // "null" (a sandboxed or file: page) included
	}
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	if !strings.EqualFold(u.Scheme, scheme) {
		return false
	}
	return strings.EqualFold(withPort(u.Host, scheme), withPort(req.Host, scheme))
}

// withPort is host with the scheme's default port when it names none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}
