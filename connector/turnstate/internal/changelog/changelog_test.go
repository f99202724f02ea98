package changelog

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/dshtrace/dshtrace/connector/turnstate/internal/changelog/changelogtest"
)

// sessionGroup is the journal's grouping: `s/"ID"` and every key under it.
func sessionGroup(k string) string {
	if i := strings.Index(k, "\"/"); i >= 0 {
		return k[:i+1]
	}
	return k
}

func open(t *testing.T, c *kfake.Cluster, owner string) *Log {
	return openWith(t, c, owner, false)
}

// openWith opens a log of four partitions, partitioned by source or not.
func openWith(t *testing.T, c *kfake.Cluster, owner string, bySource bool) *Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Open(ctx, Config{Brokers: c.ListenAddrs(), Topic: "state", Owner: owner, Partitions: 4, ReplicationFactor: -1,
		MaxRecordBytes: 1 << 20, Group: sessionGroup, Logger: zaptest.NewLogger(t), BySource: bySource})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	return l
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestWriteSyncView(t *testing.T) {
	c := changelogtest.Cluster(t)
	a, b := open(t, c, "a"), open(t, c, "b")
	ctx := ctxT(t)

	require.NoError(t, a.Write(ctx, []Op{
		{Key: `s/"one"`, Value: []byte("mark1")},
		{Key: `s/"one"/h`, Value: []byte("header")},
		{Key: `s/"one"/c/0`, Value: []byte("chunk0")},
		{Key: `s/"two"`, Value: []byte("mark2")},
	}))
	// b sees a's writes once it synced: read-your-peers'-writes.
	require.NoError(t, b.Sync(ctx))
	v, ok := b.Get(`s/"one"/c/0`)
	require.True(t, ok)
	assert.Equal(t, "chunk0", string(v))
	keys, w := b.Keys(`s/"one"`)
	assert.Equal(t, []string{`s/"one"`, `s/"one"/c/0`, `s/"one"/h`}, keys)
	assert.Equal(t, a.Writer(), w)
	assert.Equal(t, "a", OwnerOf(w))
	assert.Equal(t, []string{`s/"one"`, `s/"two"`}, b.DrainForeign(), "a's groups are foreign to b")
	assert.Empty(t, b.DrainForeign(), "drained")

	// a's own writes are not foreign to a.
	require.NoError(t, a.Sync(ctx))
	assert.Empty(t, a.DrainForeign())

	// b takes "one" over: a learns it, and the chunk b deleted is gone.
	require.NoError(t, b.Write(ctx, []Op{{Key: `s/"one"/c/0`}, {Key: `s/"one"`, Value: []byte("mark1b")}}))
	require.NoError(t, a.Sync(ctx))
	assert.Equal(t, []string{`s/"one"`}, a.DrainForeign())
	_, ok = a.Get(`s/"one"/c/0`)
	assert.False(t, ok, "tombstone removes the key")
	keys, w = a.Keys(`s/"one"`)
	assert.Equal(t, []string{`s/"one"`, `s/"one"/h`}, keys)
	assert.Equal(t, b.Writer(), w)

	// a writes "one" again (it got it back): b learns it; a's view says a.
	require.NoError(t, a.Write(ctx, []Op{{Key: `s/"one"`, Value: []byte("mark1a")}}))
	require.NoError(t, b.Sync(ctx))
	assert.Equal(t, []string{`s/"one"`}, b.DrainForeign())
	require.NoError(t, a.Sync(ctx))
	assert.Empty(t, a.DrainForeign(), "b's write of one was superseded by a's own")

	// Deleting a whole group empties it in every view.
	require.NoError(t, a.Write(ctx, []Op{{Key: `s/"two"`}}))
	require.NoError(t, b.Sync(ctx))
	keys, _ = b.Keys(`s/"two"`)
	assert.Empty(t, keys)

	st := a.Stats()
	assert.Equal(t, int64(6), st.Records)
	assert.Positive(t, st.Bytes)
}

// A new incarnation of the same owner reads everything back from the
// start of the topic, also after the broker compacted it; the earlier
// incarnation's writes are foreign to it.
func TestRestartReadsBackAfterCompaction(t *testing.T) {
	c := changelogtest.Cluster(t)
	ctx := ctxT(t)
	a := open(t, c, "a")
	for i := range 5 {
		require.NoError(t, a.Write(ctx, []Op{{Key: `s/"x"`, Value: []byte{byte('0' + i)}}, {Key: `s/"y"/c/` + string(rune('0'+i)), Value: []byte("c")}}))
	}
	require.NoError(t, a.Write(ctx, []Op{{Key: `s/"y"/c/0`}, {Key: `s/"y"/c/1`}}))
	c.Compact()

	a2 := open(t, c, "a")
	assert.NotEqual(t, a.Writer(), a2.Writer(), "a nonce per incarnation")
	require.NoError(t, a2.Sync(ctx))
	v, _ := a2.Get(`s/"x"`)
	assert.Equal(t, "4", string(v))
	keys, w := a2.Keys(`s/"y"`)
	assert.Equal(t, []string{`s/"y"/c/2`, `s/"y"/c/3`, `s/"y"/c/4`}, keys)
	assert.Equal(t, "a", OwnerOf(w))
	assert.Equal(t, []string{`s/"x"`, `s/"y"`}, a2.DrainForeign())
	n, _, _ := a2.Size()
	assert.Equal(t, 4, n)
}

// All keys of a group land in one partition (so a group's writes are
// ordered), and the topic is created compacted.
func TestGroupPartitionAndTopicConfig(t *testing.T) {
	c := changelogtest.Cluster(t)
	ctx := ctxT(t)
	a := open(t, c, "a")
	var ops []Op
	for _, s := range []string{"p", "q", "r", "s", "t", "u"} {
		for _, suffix := range []string{"", "/h", "/c/0", "/c/1"} {
			ops = append(ops, Op{Key: `s/"` + s + `"` + suffix, Value: []byte("v")})
		}
	}
	require.NoError(t, a.Write(ctx, ops))

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("state"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	partOf := map[string]int32{}
	seen := 0
	for seen < len(ops) {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			g := sessionGroup(string(r.Key))
			if p, ok := partOf[g]; ok {
				assert.Equal(t, p, r.Partition, "%s: its group is in partition %d", r.Key, p)
			}
			partOf[g] = r.Partition
		})
	}
	parts := map[int32]bool{}
	for _, p := range partOf {
		parts[p] = true
	}
	assert.Greater(t, len(parts), 1, "groups spread over partitions")

	rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "state")
	require.NoError(t, err)
	policy := ""
	for _, rc := range rcs {
		for _, cfg := range rc.Configs {
			if cfg.Key == "cleanup.policy" {
				policy = cfg.MaybeValue()
			}
		}
	}
	assert.Equal(t, "compact", policy)

	// Opening again finds the topic and keeps it.
	open(t, c, "b")
}

// Sync fails when the brokers are gone, within its context.
func TestSyncFailsWithoutBroker(t *testing.T) {
	c := changelogtest.Cluster(t)
	a := open(t, c, "a")
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	assert.Error(t, a.Sync(ctx))
	assert.Error(t, a.Write(ctx, []Op{{Key: "k", Value: []byte("v")}}))
}

func TestOpenValidates(t *testing.T) {
	_, err := Open(context.Background(), Config{Topic: "t", Owner: "o"})
	assert.ErrorContains(t, err, "brokers, topic and owner are required")
}

// A topic deleted under a running view (an operator's mistake, a broker
// that lost its data) is said once and created again, compacted; the view
// reads the new topic from its start, and writes go on.
func TestTopicDeletedIsLost(t *testing.T) {
	c := changelogtest.Cluster(t)
	l := open(t, c, "a")
	ctx := ctxT(t)
	require.NoError(t, l.Write(ctx, []Op{{Key: `s/"one"`, Value: []byte("mark1")}, {Key: `s/"two"`, Value: []byte("mark2")}}))
	require.NoError(t, l.Sync(ctx))
	assert.Empty(t, l.Lost())

	adm := kadm.NewClient(kgoClient(t, c))
	resp, err := adm.DeleteTopics(ctx, "state")
	require.NoError(t, err)
	require.NoError(t, resp.Error())

	require.NoError(t, l.Sync(ctx))

	assert.NotEmpty(t, l.Lost(), "the loss is reported")
	assert.Empty(t, l.Lost(), "once")
	cfgs, err := adm.DescribeTopicConfigs(ctx, "state")
	require.NoError(t, err)
	rc, err := cfgs.On("state", nil)
	require.NoError(t, err)
	compacted := false
	for _, cfg := range rc.Configs {
		if cfg.Key == "cleanup.policy" && strings.Contains(cfg.MaybeValue(), "compact") {
			compacted = true
		}
	}
	assert.True(t, compacted, "created again compacted")

	require.NoError(t, l.Write(ctx, []Op{{Key: `s/"three"`, Value: []byte("mark3")}}))
	require.NoError(t, l.Sync(ctx))
	b := open(t, c, "b")
	require.NoError(t, b.Sync(ctx))
	_, ok := b.Get(`s/"one"`)
	assert.False(t, ok, "what the old topic held is gone")
	v, ok := b.Get(`s/"three"`)
	assert.True(t, ok)
	assert.Equal(t, "mark3", string(v))
}

func kgoClient(t *testing.T, c *kfake.Cluster) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// With BySource a source's records go to the partition it names (modulo
// the changelog's), and a view reads only the partitions of the sources it
// follows: following one brings its groups in, unfollowing the last source
// of a partition takes them out, following it again reads it anew.
func TestBySourceViewFollowsPartitions(t *testing.T) {
	c := changelogtest.Cluster(t)
	ctx := ctxT(t)
	a, b := openWith(t, c, "a", true), openWith(t, c, "b", true)
	var ops []Op
	for src := range 6 { // sources 4 and 5 share the partitions of 0 and 1
		for k := range 3 {
			id := fmt.Sprintf(`s/"s%d-%d"`, src, k)
			ops = append(ops, Op{Key: id, Value: []byte("mark"), Source: fmt.Sprintf("sessions/%d", src)},
				Op{Key: id + "/c/0", Value: []byte("chunk"), Source: fmt.Sprintf("sessions/%d", src)})
		}
	}
	noSource := `s/"nosource"` // a key without a source, in partition 3 by its group
	for i := 0; partitionOf(noSource, 4) != 3; i++ {
		noSource = fmt.Sprintf(`s/"nosource-%d"`, i)
	}
	ops = append(ops, Op{Key: noSource, Value: []byte("mark")})
	require.NoError(t, a.Write(ctx, ops))

	// Where the records are: a source's in the partition it names.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("state"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	for seen := 0; seen < len(ops); {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			var src int
			if _, err := fmt.Sscanf(string(r.Key), `s/"s%d-`, &src); err == nil {
				assert.Equal(t, int32(src%4), r.Partition, "%s", r.Key)
			}
		})
	}

	require.NoError(t, b.Sync(ctx))
	keys, groups, _ := b.Size()
	assert.Zero(t, keys, "nothing followed, nothing read")
	assert.Zero(t, groups)

	b.Follow("sessions/1")
	require.NoError(t, b.Sync(ctx))
	got, _ := b.GroupsFrom("sessions/1")
	assert.Equal(t, []string{`s/"s1-0"`, `s/"s1-1"`, `s/"s1-2"`}, got)
	got, _ = b.GroupsFrom("sessions/5")
	assert.Len(t, got, 3, "source 5 shares source 1's partition")
	got, _ = b.GroupsFrom("sessions/2")
	assert.Empty(t, got, "not followed")
	keys, groups, bytes := b.Size()
	assert.Equal(t, 12, keys)
	assert.Equal(t, 6, groups)
	assert.Equal(t, int64(6*len("mark")+6*len("chunk")), bytes)
	reads, of := b.Following()
	assert.Equal(t, 1, reads)
	assert.Equal(t, 4, of)
	p, shared := b.PartitionOf("sessions/5")
	assert.Equal(t, int32(1), p)
	assert.True(t, shared)

	// Writes to a followed partition reach the view; the rest do not.
	b.Follow("sessions/2")
	require.NoError(t, a.Write(ctx, []Op{
		{Key: `s/"s2-9"`, Value: []byte("new"), Source: "sessions/2"},
		{Key: `s/"s3-9"`, Value: []byte("new"), Source: "sessions/3"},
	}))
	require.NoError(t, b.Sync(ctx))
	_, ok := b.Get(`s/"s2-9"`)
	assert.True(t, ok)
	_, ok = b.Get(`s/"s3-9"`)
	assert.False(t, ok, "partition 3 is not read")
	_, _, bytes = b.Size()
	assert.Equal(t, int64(9*len("mark")+9*len("chunk")+len("new")), bytes)

	// Unfollowing source 1 stops reading its partition (5 is not followed).
	b.DrainForeign()
	b.Unfollow("sessions/1")
	got, _ = b.GroupsFrom("sessions/1")
	assert.Empty(t, got)
	got, _ = b.GroupsFrom("sessions/5")
	assert.Empty(t, got)
	_, ok = b.Get(`s/"s1-0"/c/0`)
	assert.False(t, ok)
	_, _, bytes = b.Size()
	assert.Equal(t, int64(3*len("mark")+3*len("chunk")+len("new")), bytes)
	require.NoError(t, a.Write(ctx, []Op{{Key: `s/"s1-0"`, Value: []byte("later"), Source: "sessions/1"}}))
	require.NoError(t, b.Sync(ctx))
	_, ok = b.Get(`s/"s1-0"`)
	assert.False(t, ok)
	assert.Equal(t, []string(nil), b.DrainForeign(), "an unfollowed partition's writes are no one's business here")

	// Following it again reads it anew, up to the latest write.
	b.Follow("sessions/1")
	require.NoError(t, b.Sync(ctx))
	v, ok := b.Get(`s/"s1-0"`)
	assert.True(t, ok)
	assert.Equal(t, "later", string(v))
	_, ok = b.Get(`s/"s1-2"/c/0`)
	assert.True(t, ok)
	assert.Empty(t, b.Lost(), "a partition read again is no lost topic")

	b.FollowAll()
	require.NoError(t, b.Sync(ctx))
	keys, _, _ = b.Size()
	assert.Equal(t, len(ops)+2, keys, "every key: those written first, s2-9 and s3-9")
	_, ok = b.Get(noSource)
	assert.True(t, ok)
}

// Instances that write with different codecs — a deployment changing its
// compression, one instance at a time — read each other's records.
func TestMixedCompressionsRead(t *testing.T) {
	c := changelogtest.Cluster(t)
	ctx := ctxT(t)
	var logs []*Log
	for _, codec := range Compressions {
		l, err := Open(ctx, Config{Brokers: c.ListenAddrs(), Topic: "state", Owner: "w-" + codec, Partitions: 4, ReplicationFactor: -1,
			MaxRecordBytes: 1 << 20, Group: sessionGroup, Logger: zaptest.NewLogger(t), Compression: codec})
		require.NoError(t, err, codec)
		t.Cleanup(l.Close)
		// Long, repetitive values: every codec actually compresses them.
		require.NoError(t, l.Write(ctx, []Op{{Key: `s/"` + codec + `"`, Value: []byte(strings.Repeat(codec+" row ", 200))}}), codec)
		logs = append(logs, l)
	}
	for _, l := range logs {
		require.NoError(t, l.Sync(ctx))
		for _, codec := range Compressions {
			v, ok := l.Get(`s/"` + codec + `"`)
			require.True(t, ok, codec)
			require.Equal(t, strings.Repeat(codec+" row ", 200), string(v), codec)
		}
	}
	_, err := Codec("brotli")
	require.ErrorContains(t, err, `compression "brotli"`)
}
