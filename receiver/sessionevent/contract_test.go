package sessionevent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
)

// idStamper gives every record the test_id the contract checker counts
// by: its dedup identity, session/seq.
type idStamper struct{ next consumer.Logs }

func (s idStamper) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

func (s idStamper) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	for _, r := range records([]plog.Logs{ld}) {
		seq, _ := r.lr.Attributes().Get("event.seq")
		r.lr.Attributes().PutStr(receivertest.UniqueIDAttrName, fmt.Sprintf("%s/%d", r.session, seq.Int()))
	}
	return s.next.ConsumeLogs(ctx, ld)
}

// generator posts batches of rows of fresh sessions through the real HTTP
// transport, retrying on 503 as a shipper does and giving up on 400.
type generator struct {
	t    *testing.T
	url  string
	next atomic.Int64
}

func (g *generator) Start() {}
func (g *generator) Stop()  {}

func (g *generator) Generate() []receivertest.UniqueIDAttrVal {
	n := g.next.Add(1)
	session := fmt.Sprintf("contract-%d", n)
	var ids []receivertest.UniqueIDAttrVal
	var rows []string
	for seq := 1; seq <= 3; seq++ { // from seq 1: judged row by row
		ev := fmt.Sprintf(`{"type":"todo/write","seq":%d,"time":1,"data":{"todos":[]}}`, seq)
		if n%2 == 0 {
			ev = fmt.Sprintf(`{"sessionId":%q,"event":%s}`, session, ev)
		}
		rows = append(rows, ev)
		ids = append(ids, receivertest.UniqueIDAttrVal(fmt.Sprintf("%s/%d", session, seq)))
	}
	url := g.url + "/v1/sessions/" + session + "/events"
	if n%2 == 0 {
		url = g.url + "/v1/session-events"
	}
	for {
		res, err := client.Post(url, "application/x-ndjson", strings.NewReader(strings.Join(rows, "\n")))
		require.NoError(g.t, err)
		res.Body.Close()
		switch res.StatusCode {
		case http.StatusAccepted, http.StatusBadRequest: // delivered, or dropped for good
			return ids
		case http.StatusServiceUnavailable:
			continue // retry, as Retry-After asks
		default:
			g.t.Fatalf("unexpected status %d", res.StatusCode)
		}
	}
}

// TestConsumeContract runs the collector's receiver contract checker over
// the HTTP source: under random permanent and retryable refusals of the
// next consumer, with a client that retries 503s, no row is lost and none
// is delivered twice.
func TestConsumeContract(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	cfg := httpOnlyConfig()
	cfg.HTTP.Get().ServerConfig.NetAddr.Endpoint = addr
	factory := receiver.NewFactory(metadata.Type, createDefaultConfig, receiver.WithLogs(
		func(ctx context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
			return createLogs(ctx, set, cfg, idStamper{next})
		}, metadata.LogsStability))
	receivertest.CheckConsumeContract(receivertest.CheckConsumeContractParams{
		T:             t,
		Factory:       factory,
		Signal:        pipeline.SignalLogs,
		Config:        cfg,
		Generator:     &generator{t: t, url: "http://" + addr},
		GenerateCount: 200,
	})
}
