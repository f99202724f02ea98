//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dshtrace/dshtrace/internal/sampling"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

const (
	scalePartitions = 8
	scaleGroup      = "dshtrace-turn-state" // kafka-turn-state.yaml's group_id
	// scaleSessionTimeout replaces kafka-turn-state.yaml's 45s: with static
	// membership a stopped or killed member's partitions move only after it
	// (kfake's minimum is 6s).
	scaleSessionTimeout = 6 * time.Second
)

var scaleNodeNames = []string{"node-a", "node-b", "node-c", "node-d"}

// scaleNode is one turn-state instance of the scale-out test.
type scaleNode struct {
	name string
	c    *collector
	proc *process
}

// TestKafkaScaleOut runs the scale-out deployment as shipped — the ingest
// tier (kafka-ingest.yaml) → kfake (8 partitions) → turn-state instances
// (kafka-turn-state.yaml, one consumer group, the journal in the Kafka
// changelog) → Jaeger — with 64 sessions in flight, posted over HTTP in
// six parts each, every part ending in the middle of a turn. Between
// parts, at moments chosen by a seeded random generator (the seed is
// printed; DSH_SCALE_SEED reproduces it), with turns open: one instance is
// stopped with SIGTERM (a scale-down), one killed with SIGKILL (a crash; it
// is restarted later, as its pod would be), one added (a scale-up), each
// once the consumer group is settled (kfake cannot serve a member lost in
// the middle of a rebalance: groupSettled's caller says why). Every
// turn of every session must reach Jaeger as exactly one complete span tree,
// equal to the turn engine's own: 0 missing, 0 split, 0 stored twice.
func TestKafkaScaleOut(t *testing.T) {
	runScale(t, []string{"sigterm", "sigkill", "add"}, "")
}

// TestKafkaSampling is TestKafkaScaleOut with sampling on every instance
// (session_ratio 0.3) and sessions whose turns go wrong now and then (an
// error, an abort, a max-tokens stop): whichever instance decides a
// session's turn — its first owner, the one its partition moved to at a
// scale-down, a crash or a scale-up, rebuilding the steps the first one
// held — the kept set in Jaeger is the one the hash and the outcomes give:
// every kept turn once and whole, with its tracestate, no span of any
// other.
func TestKafkaSampling(t *testing.T) {
	runScaleWith(t, scaleRun{actions: []string{"sigterm", "sigkill", "add"}, ratio: samplingRatio})
}

// TestBrokerRestart runs the same deployment and sessions with the broker
// stopped mid-run, between two parts, for 10 s (30 s in make soak) while
// the next part is posted, and started again with its data (kfake
// -data-dir): 0 turns missing, split or twice. In "changelog topic gone"
// the broker comes back without the changelog topic (a broker that lost
// it): every instance must say so (changelog_lost, one error line) and
// write its sessions again, and still nothing is lost.
func TestBrokerRestart(t *testing.T) {
	t.Run("with its data", func(t *testing.T) { runScale(t, []string{"broker"}, "") })
	t.Run("changelog topic gone", func(t *testing.T) { runScale(t, []string{"broker"}, "dsh-turn-state-changelog") })
}

// brokerOutage is how long TestBrokerRestart keeps the broker stopped.
func brokerOutage() time.Duration {
	if soak() {
		return 30 * time.Second
	}
	return 10 * time.Second
}

// runScale is TestKafkaScaleOut with the given disruptions, one after each
// of parts 1, 2, …, in a seeded order: sigterm, sigkill (the node comes
// back two parts later), add, broker (the broker stops, and starts again
// after the next part, without the topic lost if it is set).
func runScale(t *testing.T, actions []string, lost string) {
	runScaleWith(t, scaleRun{actions: actions, lost: lost, ratio: 1})
}

// scaleRun is what a scale run disrupts and how it samples.
type scaleRun struct {
	actions []string
	lost    string  // a topic the broker comes back without
	ratio   float64 // turn_state's sampling::session_ratio (1: off)
}

// sampledEnds are the turn/end reasons of a sampled scale run's sessions:
// session i's turn 1 + i%5 goes wrong, one way in three, in every other
// session; the other turns complete.
var sampledEnds = []string{`{"kind":"error","error":{"message":"overloaded","code":"RATE_LIMIT"}}`,
	`{"kind":"aborted","reason":{"kind":"user"}}`, `{"kind":"max-tokens"}`}

func runScaleWith(t *testing.T, run scaleRun) {
	actions, lost := run.actions, run.lost
	kfakeBin := lookPath(t, "KFAKE", toolsHint)
	seed := uint64(envInt(t, "DSH_SCALE_SEED", int(time.Now().UnixNano()%1000000)))
	t.Logf("seed %d (DSH_SCALE_SEED=%d reproduces the moments)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 18))
	ctx := context.Background()
	dir := t.TempDir()

	broker := freeAddr(t) // kept across the broker's restarts
	j := newJaegerPorts(t)
	nodes := make([]*scaleNode, len(scaleNodeNames))
	for i, name := range scaleNodeNames {
		nodes[i] = &scaleNode{name: name, c: newCollector(t, dir, shippedConfig("kafka-turn-state")).toJaeger(j).
			set("HOSTNAME", name).set("KAFKA_BROKERS", broker).set("STATE_DIR", filepath.Join(dir, "state-"+name)).
			with("--set=connectors::turn_state::metrics_flush_interval=1s",
				"--set=receivers::kafka/sessions::session_timeout="+scaleSessionTimeout.String(),
				"--set=receivers::kafka/sessions::heartbeat_interval=1s")}
		if run.ratio < 1 {
			nodes[i].c.with(fmt.Sprintf("--set=connectors::turn_state::sampling::session_ratio=%v", run.ratio))
		}
	}

	kfakeArgs := []string{"-port=" + addrPort(broker),
		"-partitions=" + strconv.Itoa(scalePartitions), "-data-dir=" + filepath.Join(dir, "kafka-data")}
	kfakeRuns := 1
	kfake := start(t, dir, "kfake", kfakeBin, nil, kfakeArgs...)
	jaeger := startJaeger(t, dir, "jaeger", j)
	backends := []*process{jaeger}

	runs := 0
	startNode := func(n *scaleNode) {
		runs++
		n.proc = n.c.start(fmt.Sprintf("turn-state-%s-%d", n.name, runs), append(backends, kfake)...)
	}
	for _, n := range nodes[:3] {
		startNode(n)
	}
	in := newCollector(t, dir, shippedConfig("kafka-ingest")).
		set("KAFKA_BROKERS", broker).set("KAFKA_PARTITIONS", strconv.Itoa(scalePartitions)).set("STATE_DIR", filepath.Join(dir, "ingest-state"))
	ingest := in.start("ingest", append(backends, kfake)...)
	backends = append(backends, ingest)
	alive := func() []*process {
		out := append([]*process(nil), backends...)
		if kfake != nil {
			out = append(out, kfake)
		}
		for _, n := range nodes {
			if n.proc != nil {
				if done, _ := n.proc.exited(); !done {
					out = append(out, n.proc)
				}
			}
		}
		return out
	}
	poll(t, "partitions assigned to the three nodes", 60*time.Second, func() error {
		total := 0
		for _, n := range nodes[:3] {
			owned, err := ownedPartitions(ctx, n.c.selfURL())
			if err != nil {
				return err
			}
			total += owned
		}
		if total != scalePartitions {
			return fmt.Errorf("%d of %d partitions owned", total, scalePartitions)
		}
		return nil
	}, alive()...)

	// 64 sessions of 5 turns; part p (of 6) ends inside turn p.
	const nSessions, nTurns = 64, 5
	type agent struct {
		id    string
		parts [][][]byte
	}
	agents := make([]*agent, nSessions)
	var ss []session
	t0 := time.Now().Add(-time.Hour)
	for i := range agents {
		g := newLiveGen(fmt.Sprintf("scale-%02d", i), t0.Add(time.Duration(i)*time.Second))
		if run.ratio < 1 && i%2 == 0 {
			g.ends = map[int]string{1 + i%5: sampledEnds[i%3]}
		}
		a := &agent{id: g.id}
		cur := [][]byte{g.header()}
		for turn := 1; turn <= nTurns; turn++ {
			rows := g.nextTurn()
			cut := 2 + rng.IntN(len(rows)-3) // after turn/start and step/start, before turn/end
			a.parts = append(a.parts, append(cur, rows[:cut]...))
			cur = rows[cut:]
		}
		a.parts = append(a.parts, cur)
		agents[i] = a
		var all [][]byte
		for _, p := range a.parts {
			all = append(all, p...)
		}
		ss = append(ss, session{file: a.id, via: viaPost, id: a.id, body: bytes.Join(all, nil)})
	}
	want := expect(t, ss)
	rows := 0
	for _, s := range ss {
		rows += strings.Count(string(s.body), "\n")
	}

	// The disruptions, in a seeded order, one after each of parts 1-4; the
	// killed node comes back two parts after its kill (its partitions have
	// moved by then: each part takes longer than the session timeout).
	actions = slices.Clone(actions)
	rng.Shuffle(len(actions), func(i, j int) { actions[i], actions[j] = actions[j], actions[i] })
	plan := map[int][]string{}
	for i, a := range actions {
		plan[i+1] = append(plan[i+1], a)
		switch a {
		case "sigkill":
			plan[i+3] = append(plan[i+3], "restart")
		case "broker":
			plan[i+2] = append(plan[i+2], "broker-back")
		}
	}
	var brokerStopped time.Time
	victims := append([]*scaleNode(nil), nodes[:3]...)
	rng.Shuffle(len(victims), func(i, j int) { victims[i], victims[j] = victims[j], victims[i] })
	termed, killed := victims[0], victims[1]

	var posts, resent int
	postPart := func(p int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		errs := []string{}
		for _, a := range agents {
			part := a.parts[p]
			halves := len(part) > 2 && rng.IntN(2) == 0 // in one or two requests
			wg.Add(1)
			go func() {
				defer wg.Done()
				for len(part) > 0 {
					n := len(part)
					if halves {
						n, halves = len(part)/2, false
					}
					np, nr, err := postScale(in.ingestURL(), a.id, bytes.Join(part[:n], nil))
					mu.Lock()
					posts, resent = posts+np, resent+nr
					if err != nil {
						errs = append(errs, err.Error())
					}
					mu.Unlock()
					part = part[n:]
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			fatalf(t, "part %d: %s", p+1, strings.Join(errs, "; "))
		}
	}
	var moments []string
	for p := range agents[0].parts {
		postPart(p)
		wait := time.Duration(200+rng.IntN(1800)) * time.Millisecond
		time.Sleep(wait)
		for _, a := range plan[p+1] {
			moment := fmt.Sprintf("%s %s %v after part %d", a, map[string]string{"sigterm": termed.name, "sigkill": killed.name,
				"add": nodes[3].name, "restart": killed.name, "broker": "kfake", "broker-back": "kfake"}[a], wait, p+1)
			moments = append(moments, moment)
			// kfake removes a member that waits for a JoinGroup answer
			// longer than its session timeout without answering it
			// (Kafka keeps such a member alive): a member stopped while
			// a join is under way can leave another consuming its
			// partitions beside their new owner. So a disruption waits
			// for the group to be settled; its moment in the data
			// stays the seeded one unless a rebalance is still under
			// way (the wait is logged then).
			settled := time.Now()
			if kfake != nil { // with the broker away there is no group to settle
				poll(t, "group settled before "+moment, 60*time.Second, func() error {
					return groupSettled(ctx, broker, nodes)
				}, alive()...)
			}
			if d := time.Since(settled); d > 100*time.Millisecond {
				t.Logf("%s: waited %v for the group to settle", moment, d.Round(time.Millisecond))
			}
			began := time.Now()
			switch a {
			case "sigterm":
				if err := termed.proc.stop(30 * time.Second); err != nil {
					errorf(t, "%s: %v", termed.name, err)
				}
				termed.proc = nil
			case "sigkill":
				_ = syscall.Kill(-killed.proc.cmd.Process.Pid, syscall.SIGKILL)
				<-killed.proc.done
			case "add":
				startNode(nodes[3])
			case "restart":
				startNode(killed)
			case "broker":
				if err := kfake.stop(30 * time.Second); err != nil {
					errorf(t, "kfake: %v", err)
				}
				kfake, brokerStopped = nil, time.Now()
			case "broker-back":
				time.Sleep(time.Until(brokerStopped.Add(brokerOutage())))
				kfakeRuns++
				args := kfakeArgs
				if lost != "" {
					args = append(slices.Clone(args), "-delete-topics="+lost)
				}
				kfake = start(t, dir, fmt.Sprintf("kfake-%d", kfakeRuns), kfakeBin, nil, args...)
				t.Logf("the broker was away %v", time.Since(brokerStopped).Round(time.Millisecond))
			}
			// Logged as it happens, with what it took: a failure later
			// then shows how far the test came.
			t.Logf("%s: took %v", moment, time.Since(began).Round(time.Millisecond))
		}
		// Each part waits longer than the session timeout, so that a
		// stopped or killed member's partitions have moved before the
		// next part of their sessions arrives.
		time.Sleep(scaleSessionTimeout + 2*time.Second)
	}
	t.Logf("%d sessions, %d rows in %d posts (%d resent), %d turns; moments: %s", nSessions, rows, posts, resent, len(want.turns),
		strings.Join(moments, "; "))

	// Jaeger: every turn once, complete, as the engine built it; with
	// sampling every turn kept.
	check := want.turns
	var sampler *sampling.Sampler
	var sampled samplingPlan
	if run.ratio < 1 {
		sampler = sampling.New(sampling.Config{SessionRatio: run.ratio, MaxHeldSpans: sampling.DefaultMaxHeldSpans})
		sampled = planSampling(sampler, want.turns)
		check = sampled.kept
		t.Logf("sampling at %v: %d turns kept (%d for what went wrong, %d sessions kept by the hash), %d dropped",
			run.ratio, len(sampled.kept), len(sampled.wentWrong), len(sampled.keptSessions), len(sampled.dropped))
		if len(sampled.dropped) == 0 || len(sampled.wentWrong) == 0 {
			fatalf(t, "the sampling plan proves nothing")
		}
	}
	var missing, split, twice, differ int
	var problems []string
	for i, turn := range check {
		wantTD := traceOf(turn)
		id := turnrender.TraceID(turn.SessionID, turn.Number)
		var roots int
		var diffs []string
		deadline := time.Now().Add(10 * time.Second)
		switch {
		case i == 0:
			deadline = time.Now().Add(120 * time.Second) // the last rebalance, the queues
		case len(problems) > 0:
			deadline = time.Now().Add(time.Second) // they have had their time
		}
		for {
			td, err := jaegerTrace(ctx, j.query(), id)
			if err == nil {
				roots, _ = turnSpans(td)
				diffs = compareTrace(wantTD, td)
				if len(diffs) == 0 && roots == 1 {
					break
				}
			} else {
				roots, diffs = 0, []string{err.Error()}
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		raw := 0
		if rtd, err := jaegerRawTrace(ctx, j.query(), id); err == nil {
			raw = rtd.SpanCount()
		}
		name := fmt.Sprintf("%s turn %d", turn.SessionID, turn.Number)
		switch {
		case roots == 0:
			missing++
			problems = append(problems, fmt.Sprintf("%s: missing (%s)", name, strings.Join(diffs, "; ")))
		case roots > 1:
			split++
			problems = append(problems, fmt.Sprintf("%s: %d turn spans", name, roots))
		case len(diffs) > 0:
			differ++
			problems = append(problems, fmt.Sprintf("%s: %s", name, strings.Join(diffs, "; ")))
		case raw != wantTD.SpanCount():
			twice++
			problems = append(problems, fmt.Sprintf("%s: Jaeger stored %d spans, want %d", name, raw, wantTD.SpanCount()))
		}
	}
	t.Logf("Jaeger: %d turns checked: %d missing, %d split, %d incomplete or different, %d with spans stored twice",
		len(check), missing, split, differ, twice)
	if sampler != nil {
		checkTraceStates(t, ctx, j.query(), sampler, sampled)
		checkDropped(t, ctx, j.query(), sampled)
	}
	report := func(format string, args ...any) { errorf(t, format, args...) }
	if lost != "" && missing+split+twice == 0 && differ <= nSessions {
		// The stated bound of a lost changelog topic: a turn open when the
		// topic went, whose records the view had not read yet or whose
		// partition moved before its instance wrote it again, is
		// incomplete; at most the one turn each session had open.
		t.Logf("%d turns incomplete, within the bound of a lost changelog (one open turn per session, %d sessions)", differ, nSessions)
		report = t.Logf
	}
	for i, p := range problems {
		if i == 40 {
			report("... and %d more", len(problems)-40)
			break
		}
		report("%s", p)
	}

	// The hand-overs, as the instances saw them, and what each
	// instance's changelog view holds: state follows its partitions, so
	// the sessions of the partitions it consumes, not the group's.
	sums := map[string]float64{}
	running, held := 0, 0.0
	for _, n := range nodes {
		if n.proc == nil {
			continue
		}
		_, body, err := get(ctx, n.c.selfURL())
		if err != nil {
			errorf(t, "%s: %v", n.name, err)
			continue
		}
		for _, m := range selfLine.FindAllSubmatch(body, -1) {
			v, _ := strconv.ParseFloat(string(m[2]), 64)
			sums[string(m[1])] += v
		}
		owned, _ := ownedPartitions(ctx, n.c.selfURL())
		v := map[string]float64{}
		for _, m := range viewLine.FindAllSubmatch(body, -1) {
			v[string(m[1])], _ = strconv.ParseFloat(string(m[2]), 64)
		}
		running++
		held += v["view_sessions"]
		t.Logf("%s: consumes %d partitions, reads %v changelog partitions, holds %v sessions (%v bytes of values) in its view",
			n.name, owned, v["partitions_read"], v["view_sessions"], v["view_bytes"])
	}
	var keys []string
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var lines []string
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s %v", k, sums[k]))
	}
	t.Logf("self-metrics of the running instances (the stopped one's are gone): %s", strings.Join(lines, ", "))
	if slices.Contains(actions, "sigterm") && sums["otelcol_connector_turn_state_sessions_restored"] == 0 {
		errorf(t, "no session was restored from the changelog: no partition moved with sessions in it")
	}
	// Each view holds its partitions' sessions (a partition that moved away
	// is dropped at the old owner's next sweep after the new owner's first
	// write): together no session twice. A view of the whole changelog in
	// each would hold every session in each.
	if lost == "" && (held == 0 || held > float64(nSessions)) {
		errorf(t, "the views of the %d running instances hold %v sessions of %d: want each session in one view", running, held, nSessions)
	}
	if lost != "" {
		if sums["otelcol_connector_turn_state_changelog_lost"] == 0 {
			errorf(t, "the changelog topic came back gone, and no instance counted it (changelog_lost)")
		}
		for _, n := range nodes {
			if n.proc != nil && !strings.Contains(n.proc.output(), "Changelog topic LOST") {
				errorf(t, "%s did not say that the changelog topic was lost", n.name)
			}
		}
	}
	if !slices.Contains(actions, "broker") && sums["otelcol_connector_turn_state_restore_failures"] != 0 {
		errorf(t, "restores failed") // with the broker away they do, and are retried
		for _, n := range nodes {
			if n.proc == nil {
				continue
			}
			for _, line := range strings.Split(n.proc.output(), "\n") {
				if strings.Contains(line, "changelog") && (strings.Contains(line, "warn") || strings.Contains(line, "error")) {
					t.Logf("%s: %s", n.name, line)
				}
			}
		}
	}

	// What the changelog cost: its records and bytes, per event.
	records, bytesWritten := changelogSize(t, ctx, broker)
	t.Logf("changelog: %d records, %d bytes (keys, values, headers) for %d events: %.2f records and %.0f bytes per event",
		records, bytesWritten, rows-nSessions, float64(records)/float64(rows-nSessions), float64(bytesWritten)/float64(rows-nSessions))
	for _, n := range nodes {
		if n.proc != nil && strings.Contains(n.proc.output(), "panic:") {
			errorf(t, "%s panicked:\n%s", n.name, n.proc.tail(60))
		}
	}
}

// groupSettled is nil when the turn-state group is Stable with exactly the
// running instances as members and all partitions owned: no rebalance is
// under way, and no stopped member is left for one to wait for.
func groupSettled(ctx context.Context, broker string, nodes []*scaleNode) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		return err
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	gs, err := kadm.NewClient(cl).DescribeGroups(dctx, scaleGroup)
	if err != nil {
		return err
	}
	g, ok := gs[scaleGroup]
	if !ok || g.Err != nil {
		return fmt.Errorf("group %s: not described (%v)", scaleGroup, g.Err)
	}
	var members, running []string
	for _, m := range g.Members {
		if m.InstanceID != nil {
			members = append(members, *m.InstanceID)
		}
	}
	owned := 0
	for _, n := range nodes {
		if n.proc == nil {
			continue
		}
		if done, _ := n.proc.exited(); done {
			continue
		}
		running = append(running, n.name)
		k, err := ownedPartitions(ctx, n.c.selfURL())
		if err != nil {
			return err
		}
		owned += k
	}
	sort.Strings(members)
	sort.Strings(running)
	switch {
	case g.State != "Stable":
		return fmt.Errorf("group %s is %s", scaleGroup, g.State)
	case strings.Join(members, ",") != strings.Join(running, ","):
		return fmt.Errorf("group members %v, running %v", members, running)
	case owned != scalePartitions:
		return fmt.Errorf("%d of %d partitions owned", owned, scalePartitions)
	}
	return nil
}

var viewLine = regexp.MustCompile(`(?m)^otelcol_connector_turn_state_changelog_(view_sessions|view_bytes|partitions_read)(?:\{[^}]*\})? (\S+)`)

var selfLine = regexp.MustCompile(`(?m)^(otelcol_connector_turn_state_(?:sessions_restored|turns_handed_over|restore_failures|events_redelivered|restore_duration_count|restore_duration_sum|turns_dangling|changelog_lost|changelog_reads))(?:_total)?(?:\{[^}]*\})? (\S+)`)

// postScale posts rows of one session to the ingest base URL until they
// are accepted (a 5xx or a
// connection error is retried, as a client does); it returns the requests
// made and how many were resent.
func postScale(ingest, id string, body []byte) (int, int, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for n := 1; ; n++ {
		req, err := http.NewRequest(http.MethodPost, ingest+"/v1/sessions/"+id+"/events", bytes.NewReader(body))
		if err != nil {
			return n, n - 1, err
		}
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted {
				return n, n - 1, nil
			}
			if resp.StatusCode < 500 {
				return n, n - 1, fmt.Errorf("%s: HTTP %d", id, resp.StatusCode)
			}
		}
		if time.Now().After(deadline) {
			return n, n - 1, fmt.Errorf("%s: not accepted within 2m: %v", id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// changelogSize reads the whole changelog topic (kfake does not compact
// unless told to, so this is everything written) and sums its records and
// their bytes.
func changelogSize(t *testing.T, ctx context.Context, broker string) (records, size int) {
	readTopic(t, ctx, broker, "dsh-turn-state-changelog", func(r *kgo.Record) {
		records++
		size += len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			size += len(h.Key) + len(h.Value)
		}
	})
	return records, size
}

// readTopic hands each record of a topic to each, from the start of every
// partition until a poll of 3 s brings nothing more.
func readTopic(t *testing.T, ctx context.Context, broker, topic string, each func(*kgo.Record)) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fatalf(t, "%s client: %v", topic, err)
	}
	defer cl.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			each(r)
		})
		if n == 0 {
			return
		}
	}
}
