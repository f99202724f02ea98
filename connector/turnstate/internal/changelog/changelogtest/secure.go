// Package changelogtest starts the in-process Kafka clusters (franz-go's
// kfake, a real implementation of the broker protocol) that the changelog's
// tests and the connector's talk to.
package changelogtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Cluster starts a one-broker plaintext cluster, stopped when the test
// ends.
func Cluster(t testing.TB) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Users of SecureCluster, by SASL mechanism: user and password.
var Users = map[string][2]string{
	"PLAIN":         {"dsh", "secret"},
	"SCRAM-SHA-256": {"dsh256", "secret256"},
	"SCRAM-SHA-512": {"dsh512", "secret512"},
}

// SecureCluster starts a one-broker cluster that wants TLS (a certificate
// for 127.0.0.1 made for the test) and SASL (the Users), stopped when the
// test ends. It returns the pool that trusts the certificate and the
// certificate as PEM, for a ca_file.
func SecureCluster(t testing.TB) (*kfake.Cluster, *x509.CertPool, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.EnableSASL(),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12})}
	for mech, up := range Users {
		opts = append(opts, kfake.Superuser(mech, up[0], up[1]))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, pool, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
