package sessionevent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colclient "go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/testcorpus/testlog"
)

// TestPartitionKeys: the key found for each partition is one Kafka's
// default partitioner sends there, for small and large partition counts.
func TestPartitionKeys(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 8, 12, 24, 64, 1000} {
		keys := partitionKeys(n)
		require.Len(t, keys, n)
		seen := map[string]bool{}
		for p, k := range keys {
			assert.Equal(t, p, kafkaPartition(k, n), "n=%d: key %q", n, k)
			assert.False(t, seen[k], "n=%d: key %q twice", n, k)
			seen[k] = true
		}
	}
}

// TestKafkaPartitionIsTheJavaClients: kafkaPartition is how Kafka's Java
// client partitions a keyed record — toPositive(murmur2(key)) mod n, murmur2
// with the client's seed — checked against the algorithm written out here
// on keys of every tail length and on the keys the receiver uses.
func TestKafkaPartitionIsTheJavaClients(t *testing.T) {
	keys := []string{"", "a", "ab", "abc", "abcd", "abcde", "session-1", clientid.Key("team-a", "session-1")}
	keys = append(keys, partitionKeys(24)...)
	for _, k := range keys {
		for _, n := range []int{1, 7, 24, 1000} {
			assert.Equal(t, int(javaMurmur2([]byte(k))&0x7fffffff)%n, kafkaPartition(k, n), "key %q, n=%d", k, n)
		}
	}
}

// javaMurmur2 is MurmurHash2 as Kafka's Java client computes it
// (org.apache.kafka.common.utils.Utils.murmur2): 32 bits, seed 0x9747b28c,
// four bytes at a time little-endian, then the tail.
func javaMurmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	h := uint32(seed) ^ uint32(len(data))
	n4 := len(data) / 4
	for i := range n4 {
		k := uint32(data[4*i]) | uint32(data[4*i+1])<<8 | uint32(data[4*i+2])<<16 | uint32(data[4*i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[4*n4:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// batches records what the receiver hands on: each batch's partition key
// (client metadata) and other metadata, and its sessions.
type batches struct {
	err  error
	got  []batch
	fail int // refuse the batch with this index (from 1)
}

type batch struct {
	key, header string
	sessions    []string
	records     int
	ld          plog.Logs
}

func (b *batches) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (b *batches) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	md := colclient.FromContext(ctx).Metadata
	bt := batch{header: fmt.Sprint(md.Get("x-tenant")), records: ld.LogRecordCount(), ld: ld}
	if k := md.Get(PartitionMetadataKey); len(k) == 1 {
		bt.key = k[0]
	}
	for _, rl := range ld.ResourceLogs().All() {
		bt.sessions = append(bt.sessions, sessionOf(rl))
	}
	b.got = append(b.got, bt)
	if len(b.got) == b.fail {
		return b.err
	}
	return nil
}

func sessionOf(rl plog.ResourceLogs) string {
	a := rl.Resource().Attributes()
	id, _ := a.Get(logrecord.AttrSessionID)
	user := ""
	if v, ok := a.Get("enduser.id"); ok {
		user = v.Str()
	}
	return clientid.Key(user, id.Str())
}

// logsOf builds one ResourceLogs per session, as the receiver does, with
// records records each.
func logsOf(records int, sessions ...string) plog.Logs {
	ld := plog.NewLogs()
	for _, key := range sessions {
		lrs := logrecord.NewResourceLogs(ld, "test", key, nil)
		for i := range records {
			lrs.AppendEmpty().Body().SetStr(fmt.Sprintf("%s/%d", key, i))
		}
	}
	return ld
}

// TestPartitionedGroupsBySessionPartition: a batch of many sessions (some
// scoped by a client) is handed on as one batch per partition, every
// session in the partition Kafka's default partitioner gives its key, the
// batch named by that partition's key, the metadata it came with kept, and
// every record once.
func TestPartitionedGroupsBySessionPartition(t *testing.T) {
	const n = 8
	sink := &batches{}
	c := newPartitioned(sink, n)
	var keys []string
	for i := range 40 {
		k := fmt.Sprintf("session-%d", i)
		if i%3 == 0 {
			k = clientid.Key("team-a", k)
		}
		keys = append(keys, k)
	}
	ctx := colclient.NewContext(context.Background(), colclient.Info{
		Metadata: colclient.NewMetadata(map[string][]string{"x-tenant": {"t1"}}),
	})
	require.NoError(t, c.ConsumeLogs(ctx, logsOf(3, keys...)))

	byKey := map[string]int{}
	for p, k := range partitionKeys(n) {
		byKey[k] = p
	}
	want := map[int][]string{}
	for _, k := range keys {
		p := kafkaPartition(k, n)
		want[p] = append(want[p], k)
	}
	require.Len(t, sink.got, len(want), "one batch per partition holding sessions")
	records := 0
	for _, b := range sink.got {
		p, ok := byKey[b.key]
		require.True(t, ok, "batch key %q is a partition's key", b.key)
		assert.Equal(t, want[p], b.sessions, "partition %d: its sessions, in the order they came", p)
		assert.Equal(t, "[t1]", b.header, "the request's metadata kept")
		records += b.records
	}
	assert.Equal(t, 3*len(keys), records, "every record once")
}

// TestPartitionedOneSession: a batch of one session (a request of the
// session endpoint) goes on whole, the same Logs, under its partition's key.
func TestPartitionedOneSession(t *testing.T) {
	sink := &batches{}
	c := newPartitioned(sink, 24)
	ld := logsOf(5, "s1", "s1")
	require.NoError(t, c.ConsumeLogs(context.Background(), ld))
	require.Len(t, sink.got, 1)
	assert.Equal(t, partitionKeys(24)[kafkaPartition("s1", 24)], sink.got[0].key)
	assert.Equal(t, 10, sink.got[0].records)
	assert.Equal(t, ld.ResourceLogs().At(0).Resource().Attributes().AsRaw(),
		sink.got[0].ld.ResourceLogs().At(0).Resource().Attributes().AsRaw())
}

// TestPartitionedRefusal: a refused batch ends the delivery with its
// error; the source delivers again.
func TestPartitionedRefusal(t *testing.T) {
	refused := errors.New("refused")
	sink := &batches{fail: 1, err: refused}
	c := newPartitioned(sink, 4)
	var keys []string
	for i := range 20 {
		keys = append(keys, fmt.Sprintf("s%d", i))
	}
	assert.ErrorIs(t, c.ConsumeLogs(context.Background(), logsOf(1, keys...)), refused)
	assert.Len(t, sink.got, 1, "nothing handed on after the refusal")
}

// syncBatches is batches for a receiver's goroutines.
type syncBatches struct {
	mu sync.Mutex
	b  batches
}

func (s *syncBatches) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *syncBatches) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.ConsumeLogs(ctx, ld)
}

func (s *syncBatches) got() []batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.b.got)
}

// checkPartitioned: every batch is named by a partition's key and holds
// only sessions of that partition, and all rows arrived.
func checkPartitioned(t *testing.T, got []batch, n, rows int) (partitions int) {
	t.Helper()
	byKey := map[string]int{}
	for p, k := range partitionKeys(n) {
		byKey[k] = p
	}
	seen := map[int]bool{}
	records := 0
	for _, b := range got {
		p, ok := byKey[b.key]
		require.True(t, ok, "batch key %q is a partition's key", b.key)
		for _, s := range b.sessions {
			assert.Equal(t, p, kafkaPartition(s, n), "session %q in the batch of partition %d", s, p)
		}
		seen[p] = true
		records += b.records
	}
	assert.Equal(t, rows, records, "every row once")
	return len(seen)
}

// TestKafkaPartitionsBothSources: with kafka_partitions set, what either
// transport delivers — HTTP requests of one session or of many (the lines
// endpoint), the file tail's batches — is handed on by partition, under
// the partition's key.
func TestKafkaPartitionsBothSources(t *testing.T) {
	const n = 4
	var logs []string
	rows := 0
	for i := range 12 {
		l := testlog.Synth(fmt.Sprintf("part-%02d", i), 2, 2, false)
		logs = append(logs, l)
		rows += len(nonBlankLines([]byte(l)))
	}

	t.Run("http", func(t *testing.T) {
		sink := &syncBatches{}
		cfg := httpOnlyConfig()
		cfg.KafkaPartitions = n
		s := start(t, cfg, sink, nil)
		for i, l := range logs {
			res := post(t, sessionURL(s, fmt.Sprintf("part-%02d", i)), []byte(l), "Content-Type", "application/x-ndjson")
			require.Equal(t, http.StatusAccepted, res.status, "%v", res.body)
		}
		got := sink.got()
		assert.Len(t, got, len(logs), "a request of one session: one batch")
		assert.Greater(t, checkPartitioned(t, got, n, rows), 1, "the sessions spread over partitions")
	})

	t.Run("lines", func(t *testing.T) {
		// One request of every session's events, interleaved, as SDK
		// JSON-RPC notifications: split by partition on its way on.
		var body []byte
		events := 0
		split := make([][]string, len(logs))
		for i, l := range logs {
			split[i] = nonBlankLines([]byte(l))[1:] // the header is not on the live wire
		}
		for k := 0; ; k++ {
			more := false
			for i := range split {
				if k < len(split[i]) {
					more = true
					body = fmt.Appendf(body, `{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":"part-%02d","event":%s}}`+"\n", i, split[i][k])
					events++
				}
			}
			if !more {
				break
			}
		}
		sink := &syncBatches{}
		cfg := httpOnlyConfig()
		cfg.KafkaPartitions = n
		s := start(t, cfg, sink, nil)
		res := post(t, s.url+"/v1/session-events", body, "Content-Type", "application/jsonl")
		require.Equal(t, http.StatusAccepted, res.status, "%v", res.body)
		require.Equal(t, events, res.int("accepted"))
		got := sink.got()
		parts := checkPartitioned(t, got, n, events)
		assert.Greater(t, parts, 1, "the sessions spread over partitions")
		assert.Len(t, got, parts, "one request: one batch per partition")
	})

	t.Run("files", func(t *testing.T) {
		dir := t.TempDir()
		for i, l := range logs {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("part-%02d", i), "session.v4.jsonl"), []byte(l))
		}
		sink := &syncBatches{}
		cfg := filesOnlyConfig(filepath.Join(dir, "*", "session*.jsonl"), nil)
		cfg.KafkaPartitions = n
		start(t, cfg, sink, nil)
		require.Eventually(t, func() bool {
			total := 0
			for _, b := range sink.got() {
				total += b.records
			}
			return total >= rows
		}, 30*time.Second, 10*time.Millisecond)
		assert.Greater(t, checkPartitioned(t, sink.got(), n, rows), 1, "the sessions spread over partitions")
	})
}
