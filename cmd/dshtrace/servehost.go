package main

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
)

// hostCheck answers only requests that name this server: its listening
// address, the names it was given (--allow-host) and, when it listens on
// loopback, loopback's names. A page elsewhere that resolves its own name
// to this machine (DNS rebinding) names its own host, and is refused: it
// could otherwise read the sessions through the user's browser.
type hostCheck struct {
	mu    sync.Mutex
	names []string // lower case, without port
	ips   []net.IP // literal addresses answered
	any   bool     // listening on every interface: any of this machine's addresses
}

// hostList is a repeatable, comma-separated flag of host names.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(v string) error {
	for n := range strings.SplitSeq(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" || strings.ContainsAny(n, "/ ") {
			return fmt.Errorf("%q is not a host name", n)
		}
		if host, _, err := net.SplitHostPort(n); err == nil {
			n = host
		}
		*h = append(*h, n)
	}
	return nil
}

// loopbackNames are the names of loopback, answered on a loopback address.
var loopbackNames = []string{"localhost", "localhost.localdomain", "ip6-localhost"}

// newHostCheck answers the names given and, until listenOn says
// otherwise, loopback's.
func newHostCheck(names []string) *hostCheck {
	h := &hostCheck{}
	for _, n := range names {
		h.names = append(h.names, normalHost(n))
	}
	h.names = append(h.names, loopbackNames...)
	return h
}

// listenOn answers the listener's address: its own IP, loopback's names on
// loopback, every local address and this machine's name on 0.0.0.0 or ::.
func (s *server) listenOn(a net.Addr) {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return
	}
	h := s.hosts
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ips = append(h.ips, ta.IP)
	switch {
	case ta.IP.IsLoopback():
	case ta.IP.IsUnspecified():
		h.any = true
		if name, err := os.Hostname(); err == nil {
			h.names = append(h.names, normalHost(name))
		}
	default: // one address of the network: loopback's names are not it
		h.names = slices.DeleteFunc(h.names, func(n string) bool { return slices.Contains(loopbackNames, n) })
	}
}

// allowed reports whether a request's Host header names this server,
// else the line to answer.
func (h *hostCheck) allowed(hostport string) (string, bool) {
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = normalHost(host)
	h.mu.Lock()
	defer h.mu.Unlock()
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		if h.answersIP(ip) {
			return "", true
		}
	} else if slices.Contains(h.names, host) {
		return "", true
	}
	return fmt.Sprintf("dshtrace serve answers for %s, not for the host %q; a page reaching it by another name may be a DNS rebinding attack (to allow that name, start serve with --allow-host NAME)",
		h.describe(), hostport), false
}

// answersIP reports whether a literal address is this server's: one it
// listens on, loopback when it listens on loopback or everywhere, a
// local interface's when it listens everywhere.
func (h *hostCheck) answersIP(ip net.IP) bool {
	for _, own := range h.ips {
		if own.Equal(ip) || own.IsLoopback() && ip.IsLoopback() {
			return true
		}
	}
	if len(h.ips) == 0 && ip.IsLoopback() {
		return true // not listening yet (a test's server): loopback
	}
	if !h.any {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// describe names what the server answers for.
func (h *hostCheck) describe() string {
	var out []string
	for _, ip := range h.ips {
		if ip.IsUnspecified() {
			out = append(out, "this machine's addresses")
		} else {
			out = append(out, ip.String())
		}
	}
	return strings.Join(append(out, h.names...), ", ")
}

// normalHost is a host name as compared: lower case, without a final dot.
func normalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }
