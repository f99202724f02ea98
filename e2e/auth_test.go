//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// TestAuthIngest runs deploy/collector/auth-ingest.yaml as shipped, its
// addresses and secrets from the environment: TLS on both listeners, an
// htpasswd line per agent (its name and token) and per uploading person.
// Requests without valid credentials get 401 and nothing is accepted.
func TestAuthIngest(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(testcorpus.Dir(t), "v0/examples/acp-agent/tests/snapshots/text-turn/session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	sum := sha1.Sum([]byte("s3cret"))
	htpasswd := filepath.Join(dir, "ingest.htpasswd")
	if err := os.WriteFile(htpasswd, []byte("alice:{SHA}"+base64.StdEncoding.EncodeToString(sum[:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "agent-token-e2e"
	agentsPasswd := filepath.Join(dir, "agents.htpasswd")
	tsum := sha1.Sum([]byte(token))
	if err := os.WriteFile(agentsPasswd, []byte("agent-7:{SHA}"+base64.StdEncoding.EncodeToString(tsum[:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// No Jaeger: the test judges the ingest, its traces go nowhere.
	col := newCollector(t, dir, shippedConfig("auth-ingest")).toJaeger(newJaegerPorts(t)).
		set("AGENTS_HTPASSWD_FILE", agentsPasswd).set("HTPASSWD_FILE", htpasswd).set("TLS_CERT_FILE", certFile).set("TLS_KEY_FILE", keyFile)
	p := col.start("otelcol-dsh-auth")

	tlsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	send := func(url string, auth func(*http.Request)) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		if auth != nil {
			auth(req)
		}
		resp, err := tlsClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	basic := func(user, pass string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, pass) }
	}
	agents, uploads := "https://"+col.addr("AGENTS_ENDPOINT")+"/v1/sessions/e2e-auth-agent/events", "https://"+col.addr("UPLOADS_ENDPOINT")+"/v1/sessions/e2e-auth-upload/events"
	for _, c := range []struct {
		name string
		url  string
		auth func(*http.Request)
		want int
	}{
		{"agents without credentials", agents, nil, http.StatusUnauthorized},
		{"agents with a wrong token", agents, basic("agent-7", "nope"), http.StatusUnauthorized},
		{"agents as an uploading person", agents, basic("alice", "s3cret"), http.StatusUnauthorized},
		{"agents as agent-7", agents, basic("agent-7", token), http.StatusAccepted},
		{"uploads without credentials", uploads, nil, http.StatusUnauthorized},
		{"uploads with a wrong password", uploads, basic("alice", "wrong"), http.StatusUnauthorized},
		{"uploads as an agent", uploads, basic("agent-7", token), http.StatusUnauthorized},
		{"uploads as alice", uploads, basic("alice", "s3cret"), http.StatusAccepted},
	} {
		if code, resp := send(c.url, c.auth); code != c.want {
			t.Errorf("%s: HTTP %d %s, want %d", c.name, code, resp, c.want)
		}
	}
	// Plain HTTP is refused: the listeners speak TLS only.
	if resp, err := client.Post("http://"+col.addr("AGENTS_ENDPOINT")+"/v1/sessions/x/events", "application/x-ndjson", bytes.NewReader(body)); err == nil {
		if resp.StatusCode == http.StatusAccepted {
			t.Error("plain HTTP accepted")
		}
		resp.Body.Close()
	}
	// Exactly the two authenticated posts became records.
	want := float64(2 * rows(body))
	poll(t, "the two authenticated posts accepted", 30*time.Second, func() error {
		n, err := col.accepted(context.Background())
		if err == nil && n != want {
			err = fmt.Errorf("%v log records accepted, want %v", n, want)
		}
		return err
	}, p)
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns a
// pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "otelcol-dsh e2e"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
