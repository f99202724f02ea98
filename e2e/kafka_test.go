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

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/extension/dshencoding"
	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// kafkaPartitions of the session topic (tools/kfake seeds it).
const kafkaPartitions = 4

// turnStateNode is one tier-2 collector of the Kafka deployment.
type turnStateNode struct {
	agent string // its turn_state agent_name, so that spans tell which node built them
	c     *collector
}

// TestKafkaTwoTier runs the scale-out deployment of deploy/collector as
// shipped (addresses from the environment): one ingest collector writing
// session events to Kafka grouped by their session's partition, and a consumer
// group of two turn_state collectors. Every session must be handled by
// exactly one of them — all its turns built by the same node — and every
// turn must reach Jaeger with exactly the span tree the engine computes.
func TestKafkaTwoTier(t *testing.T) {
	kfakeBin := lookPath(t, "KFAKE", toolsHint)
	var ss []session
	for _, s := range load(t, testcorpus.Dir(t)) {
		if s.via != viaTail && s.via != viaTailLive { // HTTP only: the ingest tier tails nothing here
			ss = append(ss, s)
		}
	}
	ctx := context.Background()
	dir := t.TempDir()
	broker := freeAddr(t)
	kfake := start(t, dir, "kfake", kfakeBin, nil, "-port="+addrPort(broker), "-partitions="+strconv.Itoa(kafkaPartitions))
	j := newJaegerPorts(t)
	jaeger := startJaeger(t, dir, "jaeger", j)
	procs := []*process{kfake, jaeger}

	nodes := []turnStateNode{{agent: "node-a"}, {agent: "node-b"}}
	for i := range nodes {
		n := &nodes[i]
		n.c = newCollector(t, dir, shippedConfig("kafka-turn-state")).toJaeger(j).
			set("HOSTNAME", n.agent).set("KAFKA_BROKERS", broker).set("STATE_DIR", filepath.Join(dir, "state-"+n.agent)).
			with("--set=connectors::turn_state::agent_name="+n.agent, "--set=connectors::turn_state::metrics_flush_interval=1s")
		procs = append(procs, n.c.start("turn-state-"+n.agent, procs...))
	}
	in := newCollector(t, dir, shippedConfig("kafka-ingest")).
		set("KAFKA_BROKERS", broker).set("KAFKA_PARTITIONS", strconv.Itoa(kafkaPartitions)).set("STATE_DIR", filepath.Join(dir, "ingest-state"))
	procs = append(procs, in.start("ingest", procs...))

	// The group settles: every partition owned, each node owning some.
	var cols []*collector
	for _, n := range nodes {
		cols = append(cols, n.c)
	}
	awaitPartitions(t, ctx, cols, procs...)

	for _, s := range ss {
		url, via := in.ingestURL()+"/v1/sessions/"+s.id+"/events", s.via
		if s.via == viaWire {
			url = in.ingestURL() + "/v1/session-events"
		}
		if res := post(t, url, via, s.body); res.code != http.StatusAccepted || res.Accepted == 0 {
			t.Fatalf("%s: HTTP %d %s", s.file, res.code, res.raw)
		}
	}

	want := expect(t, ss)
	bySession := map[string]map[string]bool{} // session → agents (nodes) that built its turns
	for _, turn := range want.turns {
		name := fmt.Sprintf("%s/turn-%d", turn.SessionID, turn.Number)
		node, _, diffs := builtTurn(t, ctx, j.query(), turn, procs...)
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
	checkSessionTopic(t, ctx, broker, kafkaPartitions)

	poll(t, "events counted once across the nodes", 30*time.Second, func() error {
		sum := 0.0
		for _, n := range nodes {
			v, err := metricSum(ctx, n.c.metricsURL(), "dsh_session_events_total")
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

// awaitPartitions waits until the nodes of a consumer group own every
// partition of the session topic between them, each owning some: the
// group has settled.
func awaitPartitions(t *testing.T, ctx context.Context, nodes []*collector, procs ...*process) {
	t.Helper()
	poll(t, "every partition assigned, each node owning some", 60*time.Second, func() error {
		total := 0
		for i, n := range nodes {
			owned, err := ownedPartitions(ctx, n.selfURL())
			if err != nil {
				return err
			}
			if owned == 0 {
				return fmt.Errorf("node %d owns no partition", i)
			}
			total += owned
		}
		if total != kafkaPartitions {
			return fmt.Errorf("%d of %d partitions owned", total, kafkaPartitions)
		}
		return nil
	}, procs...)
}

// builtTurn waits for a turn in Jaeger and compares it with the engine's,
// the agent named by whichever node built it: it returns that node, the
// stored trace and the differences.
func builtTurn(t *testing.T, ctx context.Context, query string, turn *turnengine.Turn, procs ...*process) (node string, got ptrace.Traces, diffs []string) {
	t.Helper()
	id := turnrender.TraceID(turn.SessionID, turn.Number)
	poll(t, fmt.Sprintf("%s/turn-%d in Jaeger", turn.SessionID, turn.Number), 60*time.Second, func() error {
		var err error
		if got, err = jaegerTrace(ctx, query, id); err != nil {
			return err
		}
		root, ok := spansByID(got)[turnrender.TurnSpanID(turn.SessionID, turn.Number)]
		if !ok {
			return fmt.Errorf("no turn span yet")
		}
		v, _ := root.Attributes().Get("gen_ai.agent.name")
		node = v.AsString()
		exp := *turn
		exp.Agent = node // the node that built it names the agent
		want := traceOf(&exp)
		if got.SpanCount() < want.SpanCount() {
			return fmt.Errorf("%d of %d spans stored", got.SpanCount(), want.SpanCount())
		}
		diffs = compareTrace(want, got)
		return nil
	}, procs...)
	return node, got, diffs
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

// checkSessionTopic reads the whole session topic as the ingest tier wrote
// it and checks its keying: every message is keyed by a key that Kafka's
// default partitioner (murmur2) sends to the partition it is in, every
// session's records are in one partition — the one that partitioner gives
// the session's key — and messages carry several sessions (the exporter
// batched a partition's requests together).
func checkSessionTopic(t *testing.T, ctx context.Context, broker string, partitions int) {
	t.Helper()
	murmur2 := kgo.StickyKeyPartitioner(nil).ForTopic("dsh-session-events")
	partitionOf := func(key []byte) int32 { return int32(murmur2.Partition(&kgo.Record{Key: key}, partitions)) }
	enc := &dshencoding.Encoding{}
	where := map[string]map[int32]bool{} // session key → partitions holding its records
	messages, multi, records := 0, 0, 0
	readTopic(t, ctx, broker, "dsh-session-events", func(r *kgo.Record) {
		if got := partitionOf(r.Key); got != r.Partition {
			t.Errorf("message at %d/%d keyed %q, which Kafka's default partitioner sends to partition %d", r.Partition, r.Offset, r.Key, got)
		}
		ld, err := enc.UnmarshalLogs(r.Value)
		if err != nil {
			t.Errorf("message at %d/%d: %v", r.Partition, r.Offset, err)
			return
		}
		sessions := map[string]bool{}
		for _, rl := range ld.ResourceLogs().All() {
			a := rl.Resource().Attributes()
			id, _ := a.Get("session.id")
			user := ""
			if v, ok := a.Get("enduser.id"); ok {
				user = v.Str()
			}
			key := clientid.Key(user, id.Str())
			sessions[key] = true
			if where[key] == nil {
				where[key] = map[int32]bool{}
			}
			where[key][r.Partition] = true
			records += rl.ScopeLogs().At(0).LogRecords().Len()
		}
		messages++
		if len(sessions) > 1 {
			multi++
		}
	})
	for key, parts := range where {
		if want := partitionOf([]byte(key)); len(parts) != 1 || !parts[want] {
			t.Errorf("session %q in partitions %v, want only %d (murmur2 of its key)", key, parts, want)
		}
	}
	if multi == 0 {
		t.Errorf("no message of %d holds more than one session: the ingest tier did not batch by partition", messages)
	}
	t.Logf("session topic: %d messages (%d of more than one session), %d records of %d sessions", messages, multi, records, len(where))
}
