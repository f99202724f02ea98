package main

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// An archive of several clients: serve lists whose session each is, and
// each client's page of a shared id is that client's, saying so; links
// stay within the client's sessions.
func TestServeSaysWhoseSession(t *testing.T) {
	root := t.TempDir()
	body := dialect(t, "v4-tools")
	put(t, root, "shared-1", "session.v4.jsonl", body)
	for _, who := range []string{"alice", "bob"} {
		croot, err := sessionroot.ClientRoot(root, who)
		must(t, err)
		b := body
		if who == "bob" {
			b = []byte(strings.ReplaceAll(string(body), "a.txt", "bob.txt"))
		}
		put(t, croot, "shared-1", "session.v4.jsonl", b)
	}
	srv := startServer(t, serverConfig{}, root)

	code, list := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("list: HTTP %d", code)
	}
	for _, want := range []string{`href="/s/shared-1"`, `href="/s/shared-1?client=alice"`, `href="/s/shared-1?client=bob"`,
		"client alice", "client bob"} {
		if !strings.Contains(list, want) {
			t.Errorf("list: no %q", want)
		}
	}
	code, page := get(t, srv, "/s/shared-1?client=bob")
	if code != http.StatusOK || !strings.Contains(page, "<dt>Client</dt><dd>bob") || !strings.Contains(page, "bob.txt") {
		t.Errorf("bob's page: HTTP %d, no client line or not his rows", code)
	}
	code, page = get(t, srv, "/s/shared-1?client=alice")
	if code != http.StatusOK || !strings.Contains(page, "<dt>Client</dt><dd>alice") || strings.Contains(page, "bob.txt") {
		t.Errorf("alice's page: HTTP %d, no client line or bob's rows in it", code)
	}
	// The page's trace ids are the collector's for the client's session.
	header := "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d" // v4-tools.jsonl's session
	for _, who := range []string{"alice", ""} {
		id := turnmodel.TraceIDOf(clientid.Key(who, header), 1)
		u := "/s/shared-1"
		if who != "" {
			u += "?client=" + who
		}
		if _, p := get(t, srv, u); !strings.Contains(p, hex.EncodeToString(id[:])) {
			t.Errorf("%s: no trace %x on the page", u, id)
		}
	}
	code, page = get(t, srv, "/s/shared-1")
	if code != http.StatusOK || strings.Contains(page, "<dt>Client</dt>") {
		t.Errorf("the root's own session: HTTP %d, or a client line", code)
	}
	if code, msg := get(t, srv, "/s/shared-1?client=carol"); code != http.StatusNotFound || !strings.Contains(msg, `client "carol"`) {
		t.Errorf("carol's: HTTP %d %q, want 404 naming the client", code, msg)
	}
}
