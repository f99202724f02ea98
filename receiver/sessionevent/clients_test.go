package sessionevent

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/storagetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collectorclient "go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/dshtrace/dshtrace/internal/semconv"
)

// namingAuth is a server authenticator that names its clients the way
// basicauth does: "Bearer NAME" lets NAME in, with the auth data attribute
// "username" = NAME.
type namingAuth struct {
	component.StartFunc
	component.ShutdownFunc
}

var _ extensionauth.Server = namingAuth{}

type username string

func (u username) GetAttribute(name string) any {
	if name == "username" {
		return string(u)
	}
	return nil
}

func (username) GetAttributeNames() []string { return []string{"username"} }

func (namingAuth) Authenticate(ctx context.Context, sources map[string][]string) (context.Context, error) {
	for _, v := range sources["Authorization"] {
		if name, ok := strings.CutPrefix(v, "Bearer "); ok && name != "" {
			info := collectorclient.FromContext(ctx)
			info.Auth = username(name)
			return collectorclient.NewContext(ctx, info), nil
		}
	}
	return ctx, errAuth
}

var errAuth = http.ErrNoCookie // any error: 401

// record is what a client's posts became: the session, client and trace
// of every record delivered.
type record struct {
	session, client string
	trace           pcommon.TraceID
	body            string
}

func delivered(sink *consumertest.LogsSink) []record {
	var out []record
	for _, ld := range sink.AllLogs() {
		rls := ld.ResourceLogs()
		for i := 0; i < rls.Len(); i++ {
			sls := rls.At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					lr := lrs.At(k)
					r := record{trace: lr.TraceID(), body: lr.Body().Str()}
					if v, ok := lr.Attributes().Get(semconv.SessionID); ok {
						r.session = v.Str()
					}
					if v, ok := lr.Attributes().Get(semconv.EnduserID); ok {
						r.client = v.Str()
					}
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// A session belongs to the client that writes it: a second authenticated
// client that posts rows under the same session id writes a session of
// its own, and swallows none of the first client's rows — whichever posts
// first. Each record names its client, and the two sessions' records never
// share a trace.
func TestHTTPSessionsBelongToTheirClient(t *testing.T) {
	rows := bytes.SplitAfter(readRepoTestdata(t, "dialects/v4-tools.jsonl"), []byte("\n"))
	header, events := rows[0], rows[1:]
	part := func(rs ...[]byte) []byte { return bytes.Join(rs, nil) }
	aliceFirst := part(append([][]byte{header}, events[:5]...)...)
	aliceRest := part(events[5:]...)
	// Bob's rows (header and seq 5–24) are forged: the same seqs, other content.
	forged := bytes.ReplaceAll(part(append([][]byte{header}, events[5:]...)...), []byte("alice"), []byte("mallory"))

	for _, order := range []string{"alice first", "bob first"} {
		t.Run(order, func(t *testing.T) {
			authID := component.MustNewID("namingauth")
			cfg := httpOnlyConfig()
			cfg.HTTP.Get().ServerConfig.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: authID}})
			host := storagetest.NewStorageHost().WithExtension(authID, namingAuth{})
			sink := new(consumertest.LogsSink)
			s := start(t, cfg, sink, host)
			url := sessionURL(s, "shared-1")
			as := func(who string) []string { return []string{"Authorization", "Bearer " + who} }

			if order == "bob first" {
				res := post(t, url, forged, as("bob")...)
				require.Equal(t, http.StatusAccepted, res.status)
				assert.Equal(t, 21, res.int("accepted"))
			}
			res := post(t, url, aliceFirst, as("alice")...)
			require.Equal(t, http.StatusAccepted, res.status)
			assert.Equal(t, 6, res.int("accepted"), "alice's header and seq 0–4")
			if order == "alice first" {
				res := post(t, url, forged, as("bob")...)
				require.Equal(t, http.StatusAccepted, res.status)
				assert.Equal(t, 21, res.int("accepted"), "bob's forged header and seq 5–24: a session of his own")
				assert.Zero(t, res.int("duplicates"))
			}
			res = post(t, url, aliceRest, as("alice")...)
			require.Equal(t, http.StatusAccepted, res.status)
			assert.Equal(t, 20, res.int("accepted"), "alice's seq 5–24: none swallowed as a duplicate")
			assert.Zero(t, res.int("duplicates"))

			byClient := map[string][]record{}
			traces := map[string]map[pcommon.TraceID]bool{}
			for _, r := range delivered(sink) {
				assert.Equal(t, "shared-1", r.session)
				byClient[r.client] = append(byClient[r.client], r)
				if traces[r.client] == nil {
					traces[r.client] = map[pcommon.TraceID]bool{}
				}
				if !r.trace.IsEmpty() {
					traces[r.client][r.trace] = true
				}
			}
			require.Equal(t, 26, len(byClient["alice"]), "every row of alice's, each naming her")
			require.Equal(t, 21, len(byClient["bob"]))
			assert.Empty(t, byClient[""], "no record without its client")
			for _, r := range byClient["alice"] {
				assert.NotContains(t, r.body, "mallory", "nothing of bob's in alice's session")
			}
			require.NotEmpty(t, traces["alice"])
			for tr := range traces["bob"] {
				assert.False(t, traces["alice"][tr], "alice and bob share trace %s", tr)
			}
		})
	}
}

// A listener without a client-naming authenticator keeps today's
// behaviour: one anonymous client, the session keyed by its id, its
// records without enduser.id, and a second post of the same rows all
// duplicates.
func TestHTTPAnonymousClientUnchanged(t *testing.T) {
	sink := new(consumertest.LogsSink)
	s := start(t, httpOnlyConfig(), sink, nil)
	file := readRepoTestdata(t, "dialects/v4-tools.jsonl")
	res := post(t, sessionURL(s, "shared-1"), file)
	require.Equal(t, http.StatusAccepted, res.status)
	res = post(t, sessionURL(s, "shared-1"), file)
	assert.Zero(t, res.int("accepted"))
	for _, r := range delivered(sink) {
		assert.Empty(t, r.client)
		assert.Equal(t, "shared-1", r.session)
	}
}
