//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// kafkaPartitions of the session topic (tools/kfake seeds it).
const kafkaPartitions = 4

// turnStateNode is one tier-2 collector of the Kafka deployment.
type turnStateNode struct {
	agent   string // its turn_state agent_name, so that spans tell which node built them
	health  string
	metrics string
	self    string
	env     []string
}

// TestKafkaTwoTier runs the scale-out deployment of deploy/collector as
// shipped (addresses from the environment): one ingest collector writing
// session events to Kafka keyed by the session.id resource, and a consumer
// group of two turn_state collectors. Every session must be handled by
// exactly one of them — all its turns built by the same node — and every
// turn must reach Jaeger with exactly the span tree the engine computes.
func TestKafkaTwoTier(t *testing.T) {
	kfakeBin := lookPath(t, "KFAKE", toolsHint)
	otelcolBin := lookPath(t, "OTELCOL_DSH", toolsHint)
	var ss []session
	for _, s := range load(t, testcorpus.Dir(t)) {
		if s.via != viaTail && s.via != viaTailLive { // HTTP only: the ingest tier tails nothing here
			ss = append(ss, s)
		}
	}
	ctx := context.Background()
	dir := t.TempDir()
	requireFree(t, "127.0.0.1:29092", "127.0.0.1:24317", "127.0.0.1:26686", "127.0.0.1:23133", "127.0.0.1:14430", "127.0.0.1:13150",
		"127.0.0.1:17950", "127.0.0.1:13151", "127.0.0.1:18951", "127.0.0.1:17951", "127.0.0.1:13152", "127.0.0.1:18952", "127.0.0.1:17952")

	kfake := start(t, dir, "kfake", kfakeBin, nil, "-port=29092", "-partitions="+strconv.Itoa(kafkaPartitions))
	jaeger := startJaeger(t, dir, "jaeger", suiteJaeger)
	procs := []*process{kfake, jaeger}

	common := []string{"KAFKA_BROKERS=127.0.0.1:29092", "TELEMETRY_HOST=127.0.0.1"}
	nodes := []turnStateNode{
		{agent: "node-a", health: "127.0.0.1:13151", metrics: "127.0.0.1:18951", self: "127.0.0.1:17951"},
		{agent: "node-b", health: "127.0.0.1:13152", metrics: "127.0.0.1:18952", self: "127.0.0.1:17952"},
	}
	for _, n := range nodes {
		env := append([]string{
			"HOSTNAME=" + n.agent, "HEALTH_ENDPOINT=" + n.health, "PROMETHEUS_ENDPOINT=" + n.metrics,
			"TELEMETRY_PORT=" + n.self[strings.LastIndexByte(n.self, ':')+1:], "TRACES_OTLP_ENDPOINT=127.0.0.1:24317",
			"STATE_DIR=" + filepath.Join(dir, "state-"+n.agent),
		}, common...)
		p := start(t, dir, "turn-state-"+n.agent, otelcolBin, env,
			"--config=../deploy/collector/kafka-turn-state.yaml",
			"--set=connectors::turn_state::agent_name="+n.agent,
			"--set=connectors::turn_state::metrics_flush_interval=1s")
		poll(t, n.agent+" healthy", 30*time.Second, httpOK("http://"+n.health+"/"), append(procs, p)...)
		procs = append(procs, p)
	}
	ingest := start(t, dir, "ingest", otelcolBin, append([]string{
		"SESSION_EVENT_ENDPOINT=127.0.0.1:14430", "HEALTH_ENDPOINT=127.0.0.1:13150",
		"STATE_DIR=" + filepath.Join(dir, "ingest-state"), "TELEMETRY_PORT=17950",
	}, common...), "--config=../deploy/collector/kafka-ingest.yaml")
	poll(t, "ingest healthy", 30*time.Second, httpOK("http://127.0.0.1:13150/"), append(procs, ingest)...)
	procs = append(procs, ingest)

	// The group settles: every partition owned, each node owning some.
	poll(t, "partitions assigned to both nodes", 60*time.Second, func() error {
		total := 0
		for _, n := range nodes {
			owned, err := ownedPartitions(ctx, "http://"+n.self+"/metrics")
			if err != nil {
				return err
			}
			if owned == 0 {
				return fmt.Errorf("%s owns no partition", n.agent)
			}
			total += owned
		}
		if total != kafkaPartitions {
			return fmt.Errorf("%d of %d partitions owned", total, kafkaPartitions)
		}
		return nil
	}, procs...)

	for _, s := range ss {
		url, via := "http://127.0.0.1:14430/v1/sessions/"+s.id+"/events", s.via
		if s.via == viaWire {
			url = "http://127.0.0.1:14430/v1/session-events"
		}
		if res := post(t, url, via, s.body); res.code != http.StatusAccepted || res.Accepted == 0 {
			t.Fatalf("%s: HTTP %d %s", s.file, res.code, res.raw)
		}
	}

	want := expect(t, ss)
	bySession := map[string]map[string]bool{} // session → agents (nodes) that built its turns
	for _, turn := range want.turns {
		id := turnrender.TraceID(turn.SessionID, turn.Number)
		name := fmt.Sprintf("%s/turn-%d", turn.SessionID, turn.Number)
		var node string
		var diffs []string
		poll(t, name+" in Jaeger", 60*time.Second, func() error {
			got, err := jaegerTrace(ctx, jaegerQuery, id)
			if err != nil {
				return err
			}
			spans := spansByID(got)
			root, ok := spans[turnrender.TurnSpanID(turn.SessionID, turn.Number)]
			if !ok {
				return fmt.Errorf("no turn span yet")
			}
			v, _ := root.Attributes().Get("gen_ai.agent.name")
			node = v.AsString()
			exp := *turn
			exp.Agent = node // the node that built it names the agent
			wantTD := traceOf(&exp)
			if got.SpanCount() < wantTD.SpanCount() {
				return fmt.Errorf("%d of %d spans stored", got.SpanCount(), wantTD.SpanCount())
			}
			diffs = compareTrace(wantTD, got)
			return nil
		}, procs...)
		for _, d := range diffs {
			t.Errorf("%s: %s", name, d)
		}
		if bySession[turn.SessionID] == nil {
			bySession[turn.SessionID] = map[string]bool{}
		}
		bySession[turn.SessionID][node] = true
	}
	perNode := map[string][]string{}
	for s, agents := range bySession {
		if len(agents) != 1 {
			t.Errorf("session %s was split over %v: partitioning by session.id failed", s, agents)
		}
		for a := range agents {
			perNode[a] = append(perNode[a], s)
		}
	}
	for a, list := range perNode {
		sort.Strings(list)
		t.Logf("%s built the turns of %d sessions: %s", a, len(list), strings.Join(list, ", "))
	}

	// Across the nodes, every event counted once: nothing lost, nothing twice.
	wantEvents := 0.0
	for k, v := range expectedSeries(want.metrics) {
		if strings.HasPrefix(k, "dsh_session_events_total{") {
			wantEvents += v
		}
	}
	poll(t, "events counted once across the nodes", 30*time.Second, func() error {
		sum := 0.0
		for _, n := range nodes {
			v, err := metricSum(ctx, "http://"+n.metrics+"/metrics", "dsh_session_events_total")
			if err != nil {
				return err
			}
			sum += v
		}
		if sum != wantEvents {
			return fmt.Errorf("%v events counted over both nodes, want %v", sum, wantEvents)
		}
		return nil
	}, procs...)
}

var partitionLine = regexp.MustCompile(`(?m)^otelcol_kafka_receiver_partition_(start|close)(?:_total)?(?:\{[^}]*\})? (\S+)`)

// ownedPartitions is partitions started minus closed, from a node's telemetry.
func ownedPartitions(ctx context.Context, url string) (int, error) {
	code, body, err := get(ctx, url)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("%s: HTTP %d", url, code)
	}
	owned := 0.0
	for _, m := range partitionLine.FindAllSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		if string(m[1]) == "start" {
			owned += v
		} else {
			owned -= v
		}
	}
	return int(owned), nil
}
