package sessionevent

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	colclient "go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/semconv"
)

// PartitionMetadataKey is the client-metadata key under which, with
// kafka_partitions set, every batch the receiver delivers names the Kafka
// partition its sessions go to: a message key that Kafka's default
// partitioner (murmur2, the kafka exporter's `sticky_key: {hasher:
// murmur2}`) sends to that partition. The kafka exporter batches by it
// (`sending_queue::batch::partition::metadata_keys`) and keys its messages
// with it (`logs::message_key_from_metadata_key`), so one message carries
// the records of every session of a partition that arrived within the
// batch's window, instead of one message per session and request.
const PartitionMetadataKey = "dsh.partition"

// maxKafkaPartitions bounds kafka_partitions: finding each partition's key
// costs about as many hashes as there are partitions.
const maxKafkaPartitions = 4096

// partitioned hands batches to next grouped by the Kafka partition of
// their sessions — the partition Kafka's default partitioner gives the
// session's key (clientid.Key) among n — with that partition's key in the
// batch's client metadata. A batch whose sessions share a partition (a
// request of one session: the common case) goes on whole.
type partitioned struct {
	next consumer.Logs
	keys []string // per partition, a key the partitioner sends there
}

func newPartitioned(next consumer.Logs, n int) *partitioned {
	return &partitioned{next: next, keys: partitionKeys(n)}
}

// kafkaPartition is the partition Kafka's default partitioner (murmur2 of
// the key) gives key among n partitions: the kafka exporter's
// `sticky_key: {hasher: murmur2}`, and the Java client's.
func kafkaPartition(key string, n int) int {
	return murmur2.Partition(&kgo.Record{Key: []byte(key)}, n)
}

var murmur2 = kgo.StickyKeyPartitioner(nil).ForTopic("")

// partitionKeys finds for each of n partitions a message key Kafka's
// default partitioner sends there: "dsh-p<N>", or the first "dsh-p<N>.<i>"
// that lands on N.
func partitionKeys(n int) []string {
	keys := make([]string, n)
	for p := range n {
		k := fmt.Sprintf("dsh-p%d", p)
		for i := 1; kafkaPartition(k, n) != p; i++ {
			k = fmt.Sprintf("dsh-p%d.%d", p, i)
		}
		keys[p] = k
	}
	return keys
}

func (c *partitioned) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// ConsumeLogs delivers ld in one batch per partition. The first refusal
// ends the delivery and is returned: the sources deliver the whole batch
// again, and turn_state downstream applies each seq of a session once
// (docs/design.md §6), so the partitions handed on before the refusal
// cost a duplicate, not a double count.
func (c *partitioned) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	rls := ld.ResourceLogs()
	if rls.Len() == 0 {
		return c.next.ConsumeLogs(ctx, ld)
	}
	first := c.partitionOf(rls.At(0))
	same := true
	for i := 1; i < rls.Len() && same; i++ {
		same = c.partitionOf(rls.At(i)) == first
	}
	if same {
		return c.next.ConsumeLogs(c.withKey(ctx, first), ld)
	}
	parts := map[int]plog.Logs{}
	var order []int
	for _, rl := range rls.All() {
		p := c.partitionOf(rl)
		part, ok := parts[p]
		if !ok {
			part = plog.NewLogs()
			parts[p] = part
			order = append(order, p)
		}
		rl.MoveTo(part.ResourceLogs().AppendEmpty())
	}
	for _, p := range order {
		if err := c.next.ConsumeLogs(c.withKey(ctx, p), parts[p]); err != nil {
			return err
		}
	}
	return nil
}

// partitionOf is the partition of a ResourceLogs' session: its resource's
// session.id and enduser.id, as the receiver puts them
// (logrecord.NewResourceLogs).
func (c *partitioned) partitionOf(rl plog.ResourceLogs) int {
	a := rl.Resource().Attributes()
	var session, user string
	if v, ok := a.Get(logrecord.AttrSessionID); ok {
		session = v.Str()
	}
	if v, ok := a.Get(semconv.EnduserID); ok {
		user = v.Str()
	}
	return kafkaPartition(clientid.Key(user, session), len(c.keys))
}

// withKey is ctx with partition p's key in its client metadata, beside
// the metadata it had (the HTTP source's include_metadata headers).
func (c *partitioned) withKey(ctx context.Context, p int) context.Context {
	info := colclient.FromContext(ctx)
	md := map[string][]string{PartitionMetadataKey: {c.keys[p]}}
	for k := range info.Metadata.Keys() {
		if !strings.EqualFold(k, PartitionMetadataKey) {
			md[k] = info.Metadata.Get(k)
		}
	}
	info.Metadata = colclient.NewMetadata(md)
	return colclient.NewContext(ctx, info)
}
