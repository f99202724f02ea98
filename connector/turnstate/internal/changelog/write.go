package changelog

// This file writes the changelog: the producer, its partitioner, and the
// writes that share its produce requests.

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producer is the client that writes: a client of its own, so that a topic
// found created anew is written by a new producer (with a new producer id:
// its sequence numbers start over with the topic's partitions).
func (cfg Config) producer() (*kgo.Client, error) {
	groupOf, bySource := cfg.Group, cfg.BySource
	codec, err := Codec(cfg.Compression)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	prod, err := kgo.NewClient(append(cfg.connOpts(),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the default, and what Write relies on
		kgo.RecordPartitioner(kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
			return func(r *kgo.Record, n int) int {
				if bySource {
					for _, h := range r.Headers {
						if h.Key == SourceHeader {
							if p, ok := sourcePartition(string(h.Value)); ok {
								return p % n
							}
						}
					}
				}
				return partitionOf(groupOf(string(r.Key)), n)
			}
		})),
		kgo.ProducerBatchMaxBytes(cfg.MaxRecordBytes),
		kgo.ProducerBatchCompression(codec, kgo.NoCompression()),
		kgo.ProducerLinger(0), // a write's records go at once; writes started during a round trip go in the next
		kgo.MetadataMinAge(time.Second),
	)...)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return prod, nil
}

// Compressions are the codecs a changelog's records may be written with.
var Compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// Codec is the producer's codec of a compression name ("" is lz4, the
// cheapest in CPU of those that compress JSON rows well).
func Codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "", "lz4":
		return kgo.Lz4Compression(), nil
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want one of %s", name, strings.Join(Compressions, ", "))
}

// partitionOf hashes a group onto one of n partitions (FNV-1a).
func partitionOf(g string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(g))
	return int(h.Sum32() % uint32(n))
}

// sourcePartition is the partition a source names ("topic/N": N).
func sourcePartition(source string) (int, bool) {
	i := strings.LastIndexByte(source, '/')
	n, err := strconv.Atoi(source[i+1:])
	return n, err == nil && n >= 0
}

// Write produces ops in order and returns once every record is
// acknowledged, or the first error. Ops of one group land in their order;
// on an error some may have landed and others not.
func (l *Log) Write(ctx context.Context, ops []Op) error {
	return l.Start(ctx, ops).Wait()
}

// Pending is a write handed to the producer and not yet acknowledged.
type Pending struct {
	done chan struct{}
	err  error
}

// Wait returns once every record of the write is acknowledged, or with the
// first error.
func (p *Pending) Wait() error {
	<-p.done
	return p.err
}

// Start hands ops to the producer, in order, and returns at once. The
// records of writes started one after the other land in that order in
// each partition, and writes started while others are in flight share
// their produce requests: a caller that starts its write and waits for it
// outside its own lock lets the writes of concurrent callers go in one
// round trip to the brokers. ctx bounds the write until it is
// acknowledged.
func (l *Log) Start(ctx context.Context, ops []Op) *Pending {
	p := &Pending{done: make(chan struct{})}
	if len(ops) == 0 {
		close(p.done)
		return p
	}
	rs := make([]*kgo.Record, len(ops))
	var bytes int64
	for i, op := range ops {
		rs[i] = &kgo.Record{
			Topic:   l.cfg.Topic,
			Key:     []byte(op.Key),
			Value:   op.Value,
			Headers: []kgo.RecordHeader{{Key: WriterHeader, Value: []byte(l.writer)}},
		}
		bytes += int64(len(op.Key) + len(op.Value) + len(WriterHeader) + len(l.writer))
		if op.Source != "" {
			rs[i].Headers = append(rs[i].Headers, kgo.RecordHeader{Key: SourceHeader, Value: []byte(op.Source)})
			bytes += int64(len(SourceHeader) + len(op.Source))
		}
	}
	var (
		mu     sync.Mutex
		left   = len(rs)
		failed error
	)
	l.mu.Lock()
	prod := l.prod
	l.mu.Unlock()
	finish := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && failed == nil {
			failed = err
		}
		if left--; left > 0 {
			return
		}
		if failed != nil {
			p.err = fmt.Errorf("changelog: write %s: %w", l.cfg.Topic, failed)
		} else {
			l.mu.Lock()
			l.stats.Records += int64(len(rs))
			l.stats.Bytes += bytes
			l.mu.Unlock()
		}
		close(p.done)
	}
	for _, r := range rs {
		prod.Produce(ctx, r, func(_ *kgo.Record, err error) { finish(err) })
	}
	return p
}

// Flush waits until every write started is acknowledged or has failed.
func (l *Log) Flush(ctx context.Context) error {
	l.mu.Lock()
	prod := l.prod
	l.mu.Unlock()
	return prod.Flush(ctx)
}

// Stats count what this process wrote.
type Stats struct {
	Records int64 // records produced (sets and tombstones)
	Bytes   int64 // their keys, values and headers
}

// Stats returns what this process wrote so far.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}
