package changelog

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog/changelogtest"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The changelog speaks to a broker that wants TLS and SASL (PLAIN and
// SCRAM): with the right credentials it writes and reads its view back;
// with a wrong password, or without TLS, Open fails and says so.
func TestTLSAndSASL(t *testing.T) {
	c, pool, _ := changelogtest.SecureCluster(t)
	u := changelogtest.Users
	clientTLS := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	openWith := func(owner string, tlsCfg *tls.Config, mech sasl.Mechanism) (*Log, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := Open(ctx, Config{Brokers: c.ListenAddrs(), Topic: "state", Owner: owner, Partitions: 2, ReplicationFactor: -1,
			MaxRecordBytes: 1 << 20, Group: sessionGroup, TLS: tlsCfg, SASL: mech})
		if err == nil {
			t.Cleanup(l.Close)
		}
		return l, err
	}
	for _, m := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{"PLAIN", plain.Auth{User: u["PLAIN"][0], Pass: u["PLAIN"][1]}.AsMechanism()},
		{"SCRAM-SHA-256", scram.Auth{User: u["SCRAM-SHA-256"][0], Pass: u["SCRAM-SHA-256"][1]}.AsSha256Mechanism()},
		{"SCRAM-SHA-512", scram.Auth{User: u["SCRAM-SHA-512"][0], Pass: u["SCRAM-SHA-512"][1]}.AsSha512Mechanism()},
	} {
		t.Run(m.name, func(t *testing.T) {
			l, err := openWith("owner-"+m.name, clientTLS, m.mech)
			require.NoError(t, err)
			ctx := ctxT(t)
			key := `s/"` + m.name + `"`
			require.NoError(t, l.Write(ctx, []Op{{Key: key, Value: []byte("mark")}}))
			require.NoError(t, l.Sync(ctx))
			v, ok := l.Get(key)
			require.True(t, ok)
			require.Equal(t, "mark", string(v))
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		_, err := openWith("intruder", clientTLS, plain.Auth{User: u["PLAIN"][0], Pass: "guess"}.AsMechanism())
		require.Error(t, err)
		require.Contains(t, err.Error(), "refusing the TLS or SASL settings")
	})
	t.Run("no TLS", func(t *testing.T) {
		_, err := openWith("plaintext", nil, plain.Auth{User: u["PLAIN"][0], Pass: u["PLAIN"][1]}.AsMechanism())
		require.ErrorContains(t, err, "TLS")
	})
}
