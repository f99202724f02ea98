package turnstate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/ptracetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog/changelogtest"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/journal"
	"github.com/dshtrace/dshtrace/connector/turnstate/internal/metadata"
	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
)

// onChangelog is a started harness whose connector journals to the
// changelog on cluster, as instance owner.
func onChangelog(t *testing.T, cluster *kfake.Cluster, owner string) *harness {
	t.Helper()
	cfg := createDefaultConfig()
	cfg.Changelog = &ChangelogConfig{Brokers: cluster.ListenAddrs(), Owner: owner, Partitions: 4, Timeout: 10 * time.Second}
	require.NoError(t, cfg.Validate())
	h := newHarness(t, cfg, nil, nil)
	h.start()
	return h
}

// metricsNow renders a harness's cumulative metrics without a flush.
func metricsNow(h *harness) pmetric.Metrics {
	c := h.core()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.metricsLocked(c.clock())
}

// moved feeds a batch to the instance that owns the partition now. The
// kafka receiver delivers from the committed offset, which is the offset
// after the old owner's last acknowledged batch; redeliver batches before
// it come again as well (a crash between the write and the commit).
func movedTo(h *harness, bs []plog.Logs, from, redeliver int) {
	for _, b := range bs[max(0, from-redeliver):] {
		h.feed(b)
	}
}

// A session's partition moves mid-turn from instance A to B, and later
// back to A. Together the instances emit exactly the spans one
// uninterrupted instance emits — the turn open at each move once,
// complete, with its real end — apply every event once and count every
// metric once; A's sweep never closes a session B took as dangling.
func TestChangelogHandOverMidTurn(t *testing.T) {
	for _, rel := range journalFiles {
		path := filepath.Join(testcorpus.Dir(t), rel)
		records, _ := buildRecords(t, path, "s-"+filepath.Base(filepath.Dir(rel)))
		bs := batches(records, 4)
		if len(bs) < 3 {
			continue
		}

		ref := newHarness(t, createDefaultConfig(), nil, nil)
		ref.start()
		for _, b := range bs {
			ref.feed(b)
		}
		want := ref.allTraces()
		refStats := ref.core().engine.Stats()
		refOpen := ref.core().engine.OpenTurns()
		refMetrics := metricsNow(ref)
		ref.shutdown()

		for _, k := range []int{1, len(bs) / 2, len(bs) - 1} {
			back := min(k+1, len(bs)-1) // where the partition comes back to A
			t.Run(fmt.Sprintf("%s/move-after-%d-back-after-%d-of-%d", filepath.Base(filepath.Dir(rel)), k, back, len(bs)), func(t *testing.T) {
				cluster := changelogtest.Cluster(t)
				a, b := onChangelog(t, cluster, "a"), onChangelog(t, cluster, "b")
				for _, x := range bs[:k] {
					a.feed(x)
				}
				aOpen := a.core().engine.OpenTurns()
				aSpans := a.traces.SpanCount()

				// The partition moves to B, which gets the rest of the
				// turn (one batch redelivered) up to back.
				for _, x := range bs[max(0, k-1):back] {
					b.feed(x)
				}
				if back > k {
					assert.Equal(t, int64(1), b.selfSum(metadata.MetricSessionsRestored), "B restored the session on first sight")
				}

				// A's sweep, long after dangling_timeout: A lets go of the
				// session B took, silently.
				a.clock.Advance(a.cfg.DanglingTimeout + time.Minute)
				a.core().sweep(context.Background())
				if back > k {
					assert.Equal(t, aSpans, a.traces.SpanCount(), "A emitted nothing for the session it lost")
					assert.Equal(t, int64(aOpen), a.selfSum(metadata.MetricTurnsHandedOver), "A handed its open turn over")
					assert.Zero(t, a.selfSum(metadata.MetricTurnsDangling, "cause=timeout"))
					assert.Zero(t, a.core().engine.Sessions())
				}

				// The partition comes back to A, which restores the session
				// from B's writes and carries it to the end.
				movedTo(a, bs, back, 1)
				if back > k {
					assert.Equal(t, int64(1), a.selfSum(metadata.MetricSessionsRestored), "A restored the session it got back")
				}
				// B learns A took it back at its next pass.
				b.core().sweep(context.Background())

				// Live steps go out in other passes than in one run (the
				// moves regroup the batches): compare the spans per resource.
				got := mergeTraces(a, b)
				require.NoError(t, ptracetest.CompareTraces(regroup(want, false), regroup(got, false),
					ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
				sa, sb := a.core().engine.Stats(), b.core().engine.Stats()
				assert.Equal(t, refStats.Events, sa.Events+sb.Events, "events applied once")
				assert.Equal(t, refStats.TurnsClosed, sa.TurnsClosed+sb.TurnsClosed, "turns closed once")
				assert.Equal(t, refOpen, a.core().engine.OpenTurns()+b.core().engine.OpenTurns(), "turns open at the end")
				ma, mb := metricsNow(a), metricsNow(b)
				for _, name := range []string{"dsh.session.events", "dsh.turns", "dsh.tool.calls", "dsh.usage.tokens"} {
					assert.Equal(t, sumTotal(refMetrics, name), sumTotal(ma, name)+sumTotal(mb, name), "%s counted once", name)
				}
				assert.Zero(t, a.selfSum(metadata.MetricTurnsDangling, "cause=timeout")+b.selfSum(metadata.MetricTurnsDangling, "cause=timeout"))

				// A clean stop of both keeps the open turn in the changelog;
				// a new start of A resumes the sessions A wrote last.
				a.shutdown()
				b.shutdown()
				a2 := onChangelog(t, cluster, "a")
				assert.Equal(t, refOpen, a2.core().engine.OpenTurns(), "open turns resumed at a restart of their owner")
				a2.shutdown()
			})
		}
	}
}

// With the kafka receiver's metadata on every batch, an instance reads the
// changelog to its end only for the first batch of a partition after it
// was assigned; the batches that follow on from its own go without the
// round trip, and the hand-over is still exact: a session's partition
// moves from A to B mid-turn and back, and together they emit what one
// uninterrupted instance emits.
func TestChangelogReadOnlyAfterAMove(t *testing.T) {
	rel := journalFiles[0]
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t), rel), "s-moves")
	bs := batches(records, 4)
	require.GreaterOrEqual(t, len(bs), 6)
	want := referenceTraces(t, bs)

	cluster := changelogtest.Cluster(t)
	a, b := onChangelog(t, cluster, "a"), onChangelog(t, cluster, "b")
	k, back := len(bs)/3, 2*len(bs)/3
	for i := 0; i < k; i++ {
		a.feedKafka(bs[i], i)
	}
	assert.Equal(t, int64(1), a.selfSum(metadata.MetricViewSyncs), "A read the changelog for its first batch only")
	for i := k; i < back; i++ { // the partition moved to B
		b.feedKafka(bs[i], i)
	}
	assert.Equal(t, int64(1), b.selfSum(metadata.MetricViewSyncs), "B read the changelog for its first batch only")
	assert.Equal(t, int64(1), b.selfSum(metadata.MetricSessionsRestored))
	for i := back; i < len(bs); i++ { // and back to A: a gap in A's offsets
		a.feedKafka(bs[i], i)
	}
	assert.Equal(t, int64(2), a.selfSum(metadata.MetricViewSyncs), "A read the changelog again after the gap")
	assert.Equal(t, int64(1), a.selfSum(metadata.MetricSessionsRestored), "A restored the session from B's writes")
	b.core().sweep(context.Background())
	got := mergeTraces(a, b)
	require.NoError(t, ptracetest.CompareTraces(regroup(want, false), regroup(got, false),
		ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
	a.shutdown()
	b.shutdown()
}

// A session whose partition moves mid-turn and that never gets another
// event is still closed as dangling, once, by the instance the partition
// moved to: that instance restores the partition's open turns with the
// partition's first batch (here another session's), and its rewrite tells
// the old owner to let the session go.
func TestChangelogPartitionRestoredOnAssignment(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), journalFiles[0])
	records, _ := buildRecords(t, path, "s")
	quiet, busy := batches(renamed(records, "-quiet"), 4), batches(renamed(records, "-busy"), 4)

	cluster := changelogtest.Cluster(t)
	a, b := onChangelog(t, cluster, "a"), onChangelog(t, cluster, "b")
	off := 0
	for _, x := range quiet { // A: the quiet session, up to a turn left open
		a.feedKafka(x, off)
		off++
		if a.core().engine.OpenTurns() > 0 {
			break
		}
	}
	require.Equal(t, 1, a.core().engine.OpenTurns(), "the quiet session has a turn open on A")

	// The partition moves to B, which gets only the busy session's batches.
	for _, x := range busy[:2] {
		b.feedKafka(x, off)
		off++
	}
	assert.Equal(t, int64(1), b.selfSum(metadata.MetricSessionsRestored), "B restored the quiet session with the partition")

	require.Equal(t, 2, b.core().engine.Sessions(), "B holds both sessions")
	// Long after dangling_timeout both sweep: A lets the session go, B
	// closes its turn as dangling.
	for _, h := range []*harness{a, b} {
		h.clock.Advance(h.cfg.DanglingTimeout + time.Minute)
		h.core().sweep(context.Background())
	}
	assert.Zero(t, a.selfSum(metadata.MetricTurnsDangling, "cause=timeout"), "A emitted nothing for the session it lost")
	assert.Equal(t, int64(1), a.selfSum(metadata.MetricTurnsHandedOver))
	assert.Equal(t, 1, danglingTurns(b, "-quiet"), "B closed the quiet session's turn as dangling, once")
	assert.Zero(t, danglingTurns(a, "-quiet"))
	a.shutdown()
	b.shutdown()
}

// danglingTurns counts the turn spans a harness emitted that end as
// dangling, of the sessions whose id ends in suffix.
func danglingTurns(h *harness, suffix string) int {
	n := 0
	td := h.allTraces()
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for k := 0; k < ss.Len(); k++ {
			spans := ss.At(k).Spans()
			for m := 0; m < spans.Len(); m++ {
				a := spans.At(m).Attributes()
				id, _ := a.Get("session.id")
				reason, _ := a.Get("dsh.turn.end_reason")
				if strings.HasSuffix(id.Str(), suffix) && reason.Str() == "dangling" {
					n++
				}
			}
		}
	}
	return n
}

// The changelog topic deleted under running instances (a broker that lost
// its data): the next sweep says so, counts it, creates the topic again and
// writes every session it holds again, so that a restart of the instance
// resumes its open turns as before.
func TestChangelogLostIsSaidAndWrittenAgain(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), journalFiles[0])
	records, _ := buildRecords(t, path, "s")
	cluster := changelogtest.Cluster(t)
	a := onChangelog(t, cluster, "a")
	open := 0
	for i := range 3 {
		for _, x := range batches(renamed(records, fmt.Sprintf("-%d", i)), 4) {
			a.feed(x)
			if a.core().engine.OpenTurns() > open {
				break // leave this session with its turn open
			}
		}
		open = a.core().engine.OpenTurns()
	}
	require.Positive(t, open)
	// The view has read every write (it normally trails by one fetch:
	// what it had not read when the topic went is not written again).
	err := a.core().journal.(*journal.Changelog).Log().Sync(context.Background())
	require.NoError(t, err)

	adm := kadm.NewClient(kgoClient(t, cluster))
	resp, err := adm.DeleteTopics(context.Background(), a.cfg.Changelog.withDefaults().Topic)
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	a.core().sweep(context.Background())
	assert.Equal(t, int64(1), a.selfSum(metadata.MetricChangelogLost), "the loss is counted once")
	a.core().sweep(context.Background())
	assert.Equal(t, int64(1), a.selfSum(metadata.MetricChangelogLost))
	a.shutdown()

	again := onChangelog(t, cluster, "a")
	assert.Zero(t, again.core().engine.OpenTurns(), "a start reads no partition of the changelog")
	// Its first batch (without partition metadata, as these: the view then
	// reads every partition) resumes the sessions this owner wrote last.
	again.feed(plog.NewLogs())
	assert.Equal(t, open, again.core().engine.OpenTurns(), "the sessions were written again: a restart resumes their open turns")
	again.shutdown()
}

func kgoClient(t *testing.T, c *kfake.Cluster) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// The passes of partitions consumed at once share their changelog round
// trips: on a broker that answers 20 ms late, 8 partitions of 6 messages
// each, consumed at once, have most of their writes in flight together and
// take fewer produce requests than messages, and the journal holds what
// one uninterrupted instance would (a restart of the owner resumes the same
// open turns).
func TestChangelogWritesShareRoundTrips(t *testing.T) {
	const parts = 8
	path := filepath.Join(testcorpus.Dir(t), journalFiles[0]) // before anything starts: it may skip
	msgs := make([][]plog.Logs, parts)
	ref := newHarness(t, createDefaultConfig(), nil, nil)
	ref.start()
	for p := range parts {
		records, _ := buildRecords(t, path, "s")
		msgs[p] = batches(renamed(records, fmt.Sprintf("-part-%d", p)), 4)
		require.GreaterOrEqual(t, len(msgs[p]), 6)
		msgs[p] = msgs[p][:6]
		for _, b := range msgs[p] {
			ref.feed(b)
		}
	}
	refOpen := ref.core().engine.OpenTurns()
	ref.shutdown()

	cluster := changelogtest.Cluster(t)
	var produces atomic.Int64
	cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		produces.Add(1)
		return nil, nil, false
	})
	changelogtest.Delay(cluster, 20*time.Millisecond)
	h := onChangelog(t, cluster, "a")
	consumePartitions(t, h, msgs)
	n := h.selfSum(metadata.MetricChangelogRecords)
	peak := h.core().journal.(*journal.Changelog).PeakInFlight()
	t.Logf("%d messages, %d produce requests, %d records written, at most %d writes in flight", parts*6, produces.Load(), n, peak)
	// One at a time (each pass waiting for its write under the lock) there
	// would never be two in flight, and one produce request per message.
	assert.Greater(t, peak, int64(parts/2), "passes of different partitions wait for their writes together")
	assert.Less(t, produces.Load(), int64(parts*6), "writes started during a round trip share produce requests")
	assert.Equal(t, int64(parts), h.selfSum(metadata.MetricViewSyncs), "one read of the changelog per partition")
	h.shutdown()
	again := onChangelog(t, cluster, "a")
	// The first batch of each partition after the restart restores the
	// partition's open turns.
	next := make([][]plog.Logs, parts)
	for p := range next {
		next[p] = []plog.Logs{plog.NewLogs()}
	}
	consumePartitions(t, again, next)
	assert.Equal(t, refOpen, again.core().engine.OpenTurns(), "the journal holds every session's open turn")
	again.shutdown()
}

// Without a reachable changelog a batch is refused unapplied, so that its
// sender retries it, and the failure is counted.
func TestChangelogUnreachableRefusesBatch(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t), journalFiles[0]), "s")
	cluster := changelogtest.Cluster(t)
	h := onChangelog(t, cluster, "a")
	h.core().cfg.Changelog.Timeout = 500 * time.Millisecond
	cluster.Close()
	ld := batches(records, 4)[0]
	ld.MarkReadOnly()
	err := h.toTr.ConsumeLogs(context.Background(), ld)
	require.ErrorContains(t, err, "read the changelog before applying the batch")
	assert.Equal(t, int64(1), h.selfSum(metadata.MetricRestoreFailures))
	assert.Zero(t, h.core().engine.Stats().Events, "nothing applied")
	assert.Zero(t, h.core().engine.Sessions())
	h.shutdown()
}

// A changelog and a storage extension are exclusive; the changelog needs
// brokers and an owner.
func TestChangelogConfigValidate(t *testing.T) {
	cfg := createDefaultConfig()
	id := journalStorageID
	cfg.Storage = &id
	cfg.Changelog = &ChangelogConfig{Owner: "a/b"}
	err := cfg.Validate()
	require.Error(t, err)
	for _, want := range []string{"storage and changelog are exclusive", "changelog::brokers must name at least one broker",
		"changelog::owner \"a/b\" must not contain '/'"} {
		assert.ErrorContains(t, err, want)
	}
	cfg = createDefaultConfig()
	cfg.Changelog = &ChangelogConfig{Brokers: []string{"k:9092"}}
	assert.ErrorContains(t, cfg.Validate(), "changelog::owner must not be empty")
}

// Start fails, naming the changelog, when no broker answers.
func TestChangelogStartFailsWithoutBroker(t *testing.T) {
	cluster := changelogtest.Cluster(t)
	addrs := cluster.ListenAddrs()
	cluster.Close()
	cfg := createDefaultConfig()
	cfg.Changelog = &ChangelogConfig{Brokers: addrs, Owner: "a", Timeout: 500 * time.Millisecond}
	h := newHarness(t, cfg, nil, nil)
	err := h.toTr.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, "turn_state: open the changelog")
	h.shutdown()
}

// Over TLS with SASL (each mechanism), as a managed Kafka wants it: the
// changelog journals, and a second instance resumes an open turn from it
// and finishes it with the spans one uninterrupted instance emits.
func TestChangelogOverTLSAndSASL(t *testing.T) {
	records, _ := buildRecords(t, filepath.Join(testcorpus.Dir(t), journalFiles[0]), "s")
	bs := batches(records, 4)
	require.GreaterOrEqual(t, len(bs), 2)
	want := referenceTraces(t, bs)

	cluster, _, caPEM := changelogtest.SecureCluster(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, caPEM, 0o600))
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			secured := func(owner string) *harness {
				cfg := createDefaultConfig()
				cfg.Changelog = &ChangelogConfig{Brokers: cluster.ListenAddrs(), Owner: owner, Topic: "state-" + mech, Partitions: 4,
					Timeout: 10 * time.Second, TLS: &configtls.ClientConfig{Config: configtls.Config{CAFile: caFile}},
					Auth: &ChangelogAuth{Mechanism: mech, Username: changelogtest.Users[mech][0], Password: configopaque.String(changelogtest.Users[mech][1])}}
				require.NoError(t, cfg.Validate())
				h := newHarness(t, cfg, nil, nil)
				h.start()
				return h
			}
			a, b := secured("a"), secured("b")
			k := len(bs) / 2
			for _, x := range bs[:k] {
				a.feed(x)
			}
			movedTo(b, bs, k, 1)
			a.feed(plog.NewLogs()) // a pass: A sees B's writes and lets the session go
			got := ptrace.NewTraces()
			for _, h := range []*harness{a, b} {
				td := h.allTraces()
				td.ResourceSpans().MoveAndAppendTo(got.ResourceSpans())
			}
			require.Equal(t, want.SpanCount(), got.SpanCount(), "spans of both instances together")
			require.Greater(t, b.selfSum(metadata.MetricSessionsRestored), int64(0), "B restored the session over TLS+SASL")
			a.shutdown()
			b.shutdown()
		})
	}
	cfg := createDefaultConfig()
	cfg.Changelog = &ChangelogConfig{Brokers: []string{"k:9092"}, Owner: "a", Auth: &ChangelogAuth{Mechanism: "GSSAPI"}}
	err := cfg.Validate()
	assert.ErrorContains(t, err, `changelog::auth::mechanism "GSSAPI": want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`)
	assert.ErrorContains(t, err, "changelog::auth::username must not be empty")
}

// An instance's changelog view holds the partitions it consumes, not the
// whole topic. A consumes the four partitions of the session topic (a
// session each, left mid-stream); B starts with an empty view, is assigned
// two of them and reads only those two, restoring their open turns. A's
// next sweep sees B's writes, lets go of every session of the two
// partitions and stops reading them. Together A and B emit exactly what
// one uninterrupted instance emits.
func TestChangelogViewFollowsPartitions(t *testing.T) {
	const parts = 4
	path := filepath.Join(testcorpus.Dir(t), journalFiles[0])
	records, _ := buildRecords(t, path, "s")
	msgs := make([][]plog.Logs, parts)
	ref := newHarness(t, createDefaultConfig(), nil, nil)
	ref.start()
	for p := range parts {
		msgs[p] = batches(renamed(records, fmt.Sprintf("-part-%d", p)), 4)
		require.GreaterOrEqual(t, len(msgs[p]), 4)
		for _, b := range msgs[p] {
			ref.feed(b)
		}
	}
	want := ref.allTraces()
	ref.shutdown()

	cluster := changelogtest.Cluster(t)
	a, b := onChangelog(t, cluster, "a"), onChangelog(t, cluster, "b")
	// The view is read from the topic in the background: an instance's
	// own writes reach it once read back, so it is read to the topic's
	// end first.
	view := func(h *harness) (sessions, partitions int64) {
		j := h.core().journal.(*journal.Changelog)
		require.NoError(t, j.Log().Sync(context.Background()))
		s, _, p := j.View()
		return s, p
	}
	k := len(msgs[0]) / 2
	for p := range parts {
		for off := range k {
			a.feedPartition(msgs[p][off], p, off)
		}
	}
	s, ps := view(a)
	assert.Equal(t, int64(parts), s, "A's view: the sessions of its four partitions")
	assert.Equal(t, int64(parts), ps)
	s, ps = view(b)
	assert.Zero(t, s, "B reads nothing before it consumes a partition")
	assert.Zero(t, ps)
	aOpen := a.core().engine.OpenTurns()

	// Partitions 2 and 3 move to B, from the offset A reached.
	for p := 2; p < parts; p++ {
		b.feedPartition(msgs[p][k], p, k)
	}
	s, ps = view(b)
	assert.Equal(t, int64(2), s, "B's view: the sessions of its two partitions")
	assert.Equal(t, int64(2), ps)
	assert.Equal(t, int64(2), b.selfSum(metadata.MetricSessionsRestored))

	a.core().sweep(context.Background())
	s, ps = view(a)
	assert.Equal(t, int64(2), s, "A no longer holds the moved partitions in its view")
	assert.Equal(t, int64(2), ps)
	assert.EqualValues(t, 2, a.selfGauge(metadata.MetricViewSessions), "the gauges say so")
	assert.EqualValues(t, 2, a.selfGauge(metadata.MetricViewPartitions))
	assert.Positive(t, a.selfGauge(metadata.MetricViewBytes))
	assert.Equal(t, 2, a.core().engine.Sessions(), "A let go of the moved partitions' sessions")
	for p := 2; p < parts; p++ {
		keys, _ := a.core().journal.(*journal.Changelog).Log().Keys(journal.SessionKey(fmt.Sprintf("%s-part-%d", sessionID(t, msgs[p][0]), p)))
		assert.Empty(t, keys)
	}
	assert.Equal(t, int64(aOpen-a.core().engine.OpenTurns()), a.selfSum(metadata.MetricTurnsHandedOver))

	for p := range parts {
		h := a
		if p >= 2 {
			h = b
		}
		for off := k; off < len(msgs[p]); off++ {
			if h == b && off == k {
				continue // fed above
			}
			h.feedPartition(msgs[p][off], p, off)
		}
	}
	got := mergeTraces(a, b)
	require.NoError(t, ptracetest.CompareTraces(regroup(want, false), regroup(got, false),
		ptracetest.IgnoreResourceSpansOrder(), ptracetest.IgnoreSpansOrder()))
	a.shutdown()
	b.shutdown()
}

// sessionID is the session id of a batch's first record, without the
// suffix renamed gave it.
func sessionID(t *testing.T, ld plog.Logs) string {
	ids := journal.BatchSessions(ld, "")
	require.NotEmpty(t, ids)
	id := ids[0]
	if i := strings.LastIndex(id, "-part-"); i >= 0 {
		id = id[:i]
	}
	return id
}

// joinGroup starts a member of consumer group g with group.instance.id
// instance, consuming the one-partition session topic, as the kafka
// receiver of that instance would, and waits until the coordinator has
// assigned it the partition.
func joinGroup(t *testing.T, cluster *kfake.Cluster, g, instance string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	adm := kadm.NewClient(kgoClient(t, cluster))
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "dsh-session-events"); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		require.NoError(t, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumerGroup(g), kgo.InstanceID(instance),
		kgo.ConsumeTopics("dsh-session-events"), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		gs, err := adm.DescribeGroups(ctx, g)
		require.NoError(c, err)
		assigned := false
		for _, d := range gs {
			for _, m := range d.Members {
				if a, ok := m.Assigned.AsConsumer(); ok && d.State == "Stable" && m.InstanceID != nil && *m.InstanceID == instance && len(a.Topics) == 1 {
					assigned = true
				}
			}
		}
		assert.True(c, assigned, "%s assigned the partition", instance)
	}, 20*time.Second, 50*time.Millisecond)
}

// A turn whose partition moved mid-turn is its new owner's alone, even
// when the old owner's dangling timeout comes just as the partition's first
// batch reaches the new owner, with the turn's end: with consumer_group the
// old owner's sweep asks the group coordinator, finds the partition another
// member's, and lets its sessions go. Without it the old owner, whose view
// does not have the new owner's write yet, closes the turn as dangling while
// the new owner closes it complete: the turn twice, the race the check
// closes. An owner that still has the partition closes its turns as before.
func TestChangelogDanglingOnlyByOwner(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), journalFiles[0])
	records, _ := buildRecords(t, path, "s")
	quiet := batches(renamed(records, "-quiet"), 4)
	for _, tc := range []struct {
		name    string
		group   string
		member  string // who the coordinator says has the partition
		moveToB bool
		twice   int // turns with two turn spans, over A and B
		dangled int // turn spans closed as dangling
	}{
		{name: "moved, asked", group: "g", member: "b", moveToB: true, twice: 0, dangled: 0},
		{name: "moved, not asked", group: "", member: "b", moveToB: true, twice: 1, dangled: 1},
		{name: "still its own", group: "g", member: "a", twice: 0, dangled: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := changelogtest.Cluster(t)
			joinGroup(t, cluster, "g", tc.member)
			on := func(owner string) *harness {
				cfg := createDefaultConfig()
				cfg.Changelog = &ChangelogConfig{Brokers: cluster.ListenAddrs(), Owner: owner, Partitions: 4, Timeout: 10 * time.Second,
					ConsumerGroup: tc.group}
				require.NoError(t, cfg.Validate())
				h := newHarness(t, cfg, nil, nil)
				h.start()
				return h
			}
			a, b := on("a"), on("b")
			off := 0
			for _, x := range quiet { // A, before the move: the session up to a turn left open
				a.feedPartition(x, 0, off)
				off++
				if a.core().engine.OpenTurns() > 0 {
					break
				}
			}
			require.Equal(t, 1, a.core().engine.OpenTurns())

			// A's dangling timeout comes as the partition's first batch
			// reaches B: B reads the changelog, restores the session and
			// applies the rest of it (the turn's end) just after A's
			// sweep looked at its view for the last time.
			// The hook is set between passes (under the pass lock): the
			// core's own sweep loop runs meanwhile.
			hook := func(f func()) {
				c := a.core()
				c.passMu.Lock()
				defer c.passMu.Unlock()
				c.journal.(*journal.Changelog).SweepLooked = f
			}
			if tc.moveToB {
				hook(func() {
					for _, x := range quiet[off:] {
						b.feedPartition(x, 0, off)
						off++
					}
				})
			}
			a.clock.Advance(a.cfg.DanglingTimeout + time.Minute)
			a.core().sweep(context.Background())
			hook(nil)
			if tc.moveToB {
				require.Equal(t, int64(1), b.selfSum(metadata.MetricSessionsRestored), "B restored the session")
				a.core().sweep(context.Background())
			}
			twice, dangled := turnsTwice(mergeTraces(a, b))
			assert.Equal(t, tc.twice, twice, "turns emitted twice")
			assert.Equal(t, tc.dangled, dangled, "turns closed as dangling")
			if tc.group != "" && tc.moveToB {
				assert.Zero(t, a.core().engine.Sessions(), "A let go of the moved partition's sessions")
				assert.Equal(t, int64(1), a.selfSum(metadata.MetricTurnsHandedOver))
			}
			a.shutdown()
			b.shutdown()
		})
	}
}

// turnsTwice counts, over the turn spans (roots) of a trace set, the turns
// with more than one, and the spans that end as dangling.
func turnsTwice(td ptrace.Traces) (twice, dangled int) {
	per := map[int64]int{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for k := 0; k < ss.Len(); k++ {
			sp := ss.At(k).Spans()
			for m := 0; m < sp.Len(); m++ {
				if !sp.At(m).ParentSpanID().IsEmpty() {
					continue
				}
				a := sp.At(m).Attributes()
				num, _ := a.Get("dsh.turn")
				if per[num.Int()]++; per[num.Int()] == 2 {
					twice++
				}
				if r, _ := a.Get("dsh.turn.end_reason"); r.Str() == "dangling" {
					dangled++
				}
			}
		}
	}
	return twice, dangled
}

// A partition that moves while its sessions are quiet gets no batch on its
// new owner; with consumer_group the new owner learns from the group
// coordinator that the partition is its own, reads its changelog, restores
// its open turn and closes it as dangling after dangling_timeout, once;
// the old owner, asking the coordinator too, lets the session go.
func TestChangelogQuietPartitionAdopted(t *testing.T) {
	path := filepath.Join(testcorpus.Dir(t), journalFiles[0])
	records, _ := buildRecords(t, path, "s")
	quiet := batches(renamed(records, "-quiet"), 4)
	cluster := changelogtest.Cluster(t)
	joinGroup(t, cluster, "g", "b")
	on := func(owner string) *harness {
		cfg := createDefaultConfig()
		cfg.Changelog = &ChangelogConfig{Brokers: cluster.ListenAddrs(), Owner: owner, Partitions: 4, Timeout: 10 * time.Second,
			ConsumerGroup: "g"}
		require.NoError(t, cfg.Validate())
		h := newHarness(t, cfg, nil, nil)
		h.start()
		return h
	}
	a, b := on("a"), on("b")
	for off, x := range quiet { // A, before the move
		a.feedPartition(x, 0, off)
		if a.core().engine.OpenTurns() > 0 {
			break
		}
	}
	require.Equal(t, 1, a.core().engine.OpenTurns())

	b.core().sweep(context.Background()) // B gets no batch: its sweep asks
	assert.Equal(t, 1, b.core().engine.OpenTurns(), "B restored the quiet partition's open turn")
	assert.Equal(t, int64(1), b.selfSum(metadata.MetricSessionsRestored))
	_, _, parts := b.core().journal.(*journal.Changelog).View()
	assert.Equal(t, int64(1), parts, "B reads the partition's changelog")

	for _, h := range []*harness{b, a} {
		h.clock.Advance(h.cfg.DanglingTimeout + time.Minute)
		h.core().sweep(context.Background())
	}
	assert.Equal(t, 1, danglingTurns(b, "-quiet"), "B closed the turn as dangling")
	assert.Zero(t, danglingTurns(a, "-quiet"), "A did not")
	assert.Zero(t, a.core().engine.Sessions(), "A let the session go")
	a.shutdown()
	b.shutdown()
}

// A stop while a sweep waits for a broker that does not answer (its
// view's read to the topic's end) does not wait for the changelog's
// timeout: the stop cancels the sweep, and the final pass follows at once.
func TestShutdownCancelsASweepWaitingForTheBroker(t *testing.T) {
	cluster := changelogtest.Cluster(t)
	h := onChangelog(t, cluster, "a")
	h.feedPartition(batches(sessionRecords(t, "waiting", 2, []testlog.Turn{{}}), 100)[0], 0, 0)
	// From now on the broker does not answer a read of the topic's end
	// offsets (the view's sync before each sweep) for a minute.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	cluster.ControlKey(int16(kmsg.ListOffsets), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		cluster.SleepControl(func() {
			select {
			case <-release:
			case <-time.After(time.Minute):
			}
		})
		return nil, nil, false
	})
	c := h.core()
	var blocked bool
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c.passMu.TryLock() {
			c.passMu.Unlock()
			continue
		}
		// A pass holds the lock for longer than a sweep takes with a
		// broker: it waits for the one that is gone.
		time.Sleep(500 * time.Millisecond)
		if !c.passMu.TryLock() {
			blocked = true
			break
		}
		c.passMu.Unlock()
	}
	require.True(t, blocked, "no sweep came to wait for the broker")
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = h.toTr.Shutdown(ctx)
	_ = h.toMt.Shutdown(ctx)
	took := time.Since(began)
	t.Logf("shutdown took %v with the sweep waiting for the broker (changelog timeout %v)", took.Round(time.Millisecond), h.cfg.Changelog.Timeout)
	require.Less(t, took, h.cfg.Changelog.Timeout/2)
}
