// Package changelog keeps a key-value state in a compacted Kafka topic,
// the way a stream processor keeps the changelog of a state store: every
// change is a record keyed by the state's key (a nil value deletes it), and
// every process sharing the topic reads it back into an in-memory view.
// The topic is the state; the view is a cache of it that each process
// rebuilds by reading the topic from its beginning: all of it, or with
// Config.BySource only the partitions it follows (Follow), the way a
// stream processor's task restores only its own partition's changelog.
//
// Keys are grouped (Config.Group): all keys of one group go to one
// partition, so the writes of a group are totally ordered, and the view
// tells who wrote a group last. Each record carries its writer, a
// per-incarnation id (the configured owner name and a random nonce), so a
// process learns that another one took a group over when that one's write
// reaches its view.
//
// Write returns only once the broker acknowledged every record (acks from
// all in-sync replicas, idempotent producer). Sync waits until the view
// has read the topic up to its end as it stood at the call: after it, the
// view holds every write acknowledged before the call, by any process.
package changelog

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/episode"
)

// WriterHeader is the record header naming the incarnation that wrote a
// record.
const WriterHeader = "dsh.writer"

// SourceHeader is the record header naming where the group's state comes
// from (for the connector: the session topic's partition), when the writer
// gives one.
const SourceHeader = "dsh.source"

// Config configures a Log.
type Config struct {
	// Brokers are the seed brokers (host:port).
	Brokers []string
	// Topic is the changelog topic; created compacted if absent.
	Topic string
	// Owner names this process in the writer header (a stable name such
	// as the pod's); a random nonce is appended per Open.
	Owner string
	// Partitions and ReplicationFactor apply when the topic is created
	// (-1: the broker's defaults).
	Partitions        int32
	ReplicationFactor int16
	// MaxRecordBytes bounds one record (the producer's batch size, the
	// topic's max.message.bytes when it is created).
	MaxRecordBytes int32
	// Group maps a key to its group: the part that picks its partition.
	// Nil: every key is its own group.
	Group func(key string) string
	// Logger logs the consumer's errors; nil logs nothing.
	Logger *zap.Logger
	// TLS, when set, encrypts the connections to the brokers.
	TLS *tls.Config
	// SASL, when set, authenticates every connection with it.
	SASL sasl.Mechanism
	// BySource partitions the topic by the records' sources instead of
	// their groups: a record whose Source ends in "/N" (a partition of
	// the topic the state comes from, "topic/N") goes to partition N
	// modulo the changelog's partitions, so a source's state is in one
	// partition; records without one go by their group. The view then
	// reads only the partitions of the sources Follow names, until
	// FollowAll.
	BySource bool
}

// connOpts are the options every client of the log connects with.
func (cfg Config) connOpts() []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID("dshtrace-changelog-" + cfg.Owner)}
	if cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg.TLS))
	}
	if cfg.SASL != nil {
		opts = append(opts, kgo.SASL(cfg.SASL))
	}
	return opts
}

// Op is one change: Value nil deletes Key. Source, if set, is written in
// the SourceHeader; the view keeps the latest per group (GroupsFrom).
type Op struct {
	Key    string
	Value  []byte
	Source string
}

// Stats count what this process wrote.
type Stats struct {
	Records int64 // records produced (sets and tombstones)
	Bytes   int64 // their keys, values and headers
}

// Log is a view of one changelog topic, and the writer into it.
type Log struct {
	cfg    Config
	writer string
	cl     *kgo.Client // reads the topic into the view; its admin client
	adm    *kadm.Client
	logger *zap.Logger
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	values  map[string][]byte
	bytes   int64 // of the values
	groups  map[string]*group
	writers map[string]string   // interned writer ids
	prod    *kgo.Client         // writes; replaced when the topic was created anew
	foreign map[string]struct{} // groups another incarnation wrote since DrainForeign
	pos     map[int32]int64     // per partition: the next offset the view has not read
	changed chan struct{}       // closed and replaced whenever pos moves
	stats   Stats
	err     error  // the consumer's last error, for Sync's timeout message
	lost    string // why the topic was found lost since the last Lost call ("" not)
	renamed bool   // the reader's fetches name a topic id the broker does not have

	// With BySource: the sources followed and their partitions, whether
	// the view reads every partition anyway, and the topic's partitions.
	follow map[string]int32
	all    bool
	parts  int32
	swap   sync.Mutex // one reader swap at a time (follow, unfollow, start over)

	// What the view holds, published after every change for readers that
	// must not wait for mu (a metrics callback).
	viewGroups, viewBytes, viewParts atomic.Int64

	reading *episode.Episode // the consumer's errors, logged once as they begin and end
}

// group is the keys of one group in the view (a session has a handful:
// a slice is smaller than a map) and its latest writer.
type group struct {
	keys   []string
	writer string // the incarnation that wrote the group's latest record (interned)
	source string // the latest source a record of the group named (interned)
	part   int32  // the partition its records are in
}

// drop removes key from the group's keys.
func (g *group) drop(key string) {
	if i := slices.Index(g.keys, key); i >= 0 {
		g.keys = slices.Delete(g.keys, i, i+1)
	}
}

// add adds key to the group's keys, unless there.
func (g *group) add(key string) {
	if !slices.Contains(g.keys, key) {
		g.keys = append(g.keys, key)
	}
}

// Open connects to the brokers, creates the topic if it does not exist
// (compacted), and starts reading it from its beginning into the view.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	if len(cfg.Brokers) == 0 || cfg.Topic == "" || cfg.Owner == "" {
		return nil, errors.New("changelog: brokers, topic and owner are required")
	}
	if cfg.Group == nil {
		cfg.Group = func(k string) string { return k }
	}
	if cfg.MaxRecordBytes <= 0 {
		cfg.MaxRecordBytes = 1 << 20
	}
	nonce := make([]byte, 6)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	l := &Log{
		cfg:     cfg,
		writer:  cfg.Owner + "/" + hex.EncodeToString(nonce),
		logger:  cfg.Logger,
		values:  map[string][]byte{},
		groups:  map[string]*group{},
		writers: map[string]string{},
		foreign: map[string]struct{}{},
		pos:     map[int32]int64{},
		follow:  map[string]int32{},
		all:     !cfg.BySource,
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if l.logger == nil {
		l.logger = zap.NewNop()
	}
	l.reading = episode.New(l.logger, "Changelog read failed; retrying", "Changelog read again")
	// The topic first, with a client of its own: the consuming client's
	// first metadata would otherwise miss a topic created after it.
	admin, err := kgo.NewClient(cfg.connOpts()...)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	err = l.ensureTopic(ctx, kadm.NewClient(admin))
	if err == nil {
		l.parts, err = partitions(ctx, kadm.NewClient(admin), cfg.Topic)
	}
	admin.Close()
	if err != nil {
		return nil, err
	}
	cl, err := cfg.reader(l.reads())
	if err != nil {
		return nil, err
	}
	prod, err := cfg.producer()
	if err != nil {
		cl.Close()
		return nil, err
	}
	l.cl, l.adm, l.prod = cl, kadm.NewClient(cl), prod
	l.startReading()
	return l, nil
}

// partitions is the number of partitions of topic, listed with adm.
func partitions(ctx context.Context, adm *kadm.Client, topic string) (int32, error) {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("changelog: list the partitions of %s: %w", topic, err)
	}
	n := int32(0)
	ends.Each(func(kadm.ListedOffset) { n++ })
	return n, nil
}

// reader is the client that reads the topic into the view, and the admin
// client: every partition from its start (reads nil), or the partitions of
// reads from the offsets given.
func (cfg Config) reader(reads map[int32]kgo.Offset) (*kgo.Client, error) {
	opts := append(cfg.connOpts(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
		kgo.FetchMaxPartitionBytes(max(cfg.MaxRecordBytes, 1<<20)),
		kgo.MetadataMinAge(time.Second),
	)
	switch {
	case reads == nil:
		opts = append(opts, kgo.ConsumeTopics(cfg.Topic))
	case len(reads) > 0:
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: reads}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return cl, nil
}

// reads is what a new reader reads: nil for every partition from its
// start, or each partition followed from where the view is in it. Callers
// hold mu, or own the Log alone.
func (l *Log) reads() map[int32]kgo.Offset {
	if l.all {
		return nil
	}
	reads := map[int32]kgo.Offset{}
	for _, p := range l.follow {
		reads[p] = kgo.NewOffset().At(l.pos[p])
	}
	return reads
}

// sourcePartition is the partition a source names ("topic/N": N).
func sourcePartition(source string) (int, bool) {
	i := strings.LastIndexByte(source, '/')
	n, err := strconv.Atoi(source[i+1:])
	return n, err == nil && n >= 0
}

// startReading starts the loop that reads the topic into the view with
// l.cl.
func (l *Log) startReading() {
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(runCtx, l.cl, l.done)
}

// producer is the client that writes: a client of its own, so that a topic
// found created anew is written by a new producer (with a new producer id:
// its sequence numbers start over with the topic's partitions).
func (cfg Config) producer() (*kgo.Client, error) {
	groupOf, bySource := cfg.Group, cfg.BySource
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
		kgo.ProducerBatchCompression(kgo.ZstdCompression(), kgo.NoCompression()),
		kgo.ProducerLinger(0), // a write's records go at once; writes started during a round trip go in the next
		kgo.MetadataMinAge(time.Second),
	)...)
	if err != nil {
		return nil, fmt.Errorf("changelog: %w", err)
	}
	return prod, nil
}

// partitionOf hashes a group onto one of n partitions (FNV-1a).
func partitionOf(g string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(g))
	return int(h.Sum32() % uint32(n))
}

// ensureTopic creates the topic, compacted, unless it exists; an existing
// topic that is not compacted is used, with a warning (it still works,
// until retention deletes state that is still needed).
func (l *Log) ensureTopic(ctx context.Context, adm *kadm.Client) error {
	compact := "compact"
	maxBytes := fmt.Sprint(l.cfg.MaxRecordBytes)
	_, err := adm.CreateTopic(ctx, l.cfg.Partitions, l.cfg.ReplicationFactor,
		map[string]*string{"cleanup.policy": &compact, "max.message.bytes": &maxBytes}, l.cfg.Topic)
	switch {
	case err == nil:
		l.logger.Info("Changelog topic created", zap.String("topic", l.cfg.Topic), zap.Int32("partitions", l.cfg.Partitions))
		return nil
	case errors.Is(err, kerr.TopicAlreadyExists):
	case errors.Is(err, context.DeadlineExceeded):
		// A broker that refuses the credentials drops the connection, and
		// the client retries until the deadline: say where to look.
		return fmt.Errorf("changelog: create topic %s: no broker of %v answered in time (unreachable, or refusing the TLS or SASL settings): %w",
			l.cfg.Topic, l.cfg.Brokers, err)
	default:
		return fmt.Errorf("changelog: create topic %s: %w", l.cfg.Topic, err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, l.cfg.Topic)
	if err != nil {
		l.logger.Warn("Changelog topic exists; its configuration could not be read", zap.String("topic", l.cfg.Topic), zap.Error(err))
		return nil
	}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if c.Key == "cleanup.policy" && !strings.Contains(c.MaybeValue(), "compact") {
				l.logger.Warn("Changelog topic is not compacted: retention may delete state still needed",
					zap.String("topic", l.cfg.Topic), zap.String("cleanup.policy", c.MaybeValue()))
			}
		}
	}
	return nil
}

// Writer is this incarnation's id, as written in the writer header.
func (l *Log) Writer() string { return l.writer }

// OwnerOf is the owner name of a writer id.
func OwnerOf(writer string) string {
	if i := strings.LastIndexByte(writer, '/'); i >= 0 {
		return writer[:i]
	}
	return writer
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

// Sync waits until the view has read every partition up to its end as
// listed at the call: every write acknowledged before Sync was called, by
// any process, is then in the view.
func (l *Log) Sync(ctx context.Context) error {
	var ends kadm.ListedOffsets
	for {
		var err error
		l.mu.Lock()
		adm := l.adm
		l.mu.Unlock()
		ends, err = adm.ListEndOffsets(ctx, l.cfg.Topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil && len(ends) == 0 {
			err = kerr.UnknownTopicOrPartition // listed without partitions: not there
		}
		if err == nil {
			break
		}
		if errors.Is(err, kerr.UnknownTopicOrPartition) && ctx.Err() == nil {
			// The topic is gone (deleted, or a broker that lost its
			// data): say so, and create it again, compacted, before a
			// write creates it with the broker's defaults.
			l.startOver("the topic does not exist")
			if cerr := l.ensureTopic(ctx, adm); cerr != nil {
				l.logger.Warn("Changelog topic could not be created again; retrying", zap.String("topic", l.cfg.Topic), zap.Error(cerr))
			}
		} else if !kerr.IsRetriable(err) || ctx.Err() != nil {
			return fmt.Errorf("changelog: list the end offsets of %s: %w", l.cfg.Topic, err)
		}
		select { // a leader moving, metadata not there yet: the client retries
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("changelog: list the end offsets of %s: %w", l.cfg.Topic, err)
		}
	}
	want := map[int32]int64{}
	l.mu.Lock()
	l.parts = 0
	ends.Each(func(o kadm.ListedOffset) {
		l.parts++
		if l.readsPartition(o.Partition) {
			want[o.Partition] = o.Offset
		}
	})
	l.publish()
	l.mu.Unlock()
	for p, end := range want {
		l.mu.Lock()
		behind := l.pos[p] > end
		read := l.pos[p]
		l.mu.Unlock()
		if behind {
			// The topic ends before what the view read of it: it was
			// created again. Read it anew from its start.
			l.startOver(fmt.Sprintf("partition %d ends at offset %d, before the %d read of it", p, end, read))
			break
		}
	}
	for {
		l.mu.Lock()
		behind := false
		for p, end := range want {
			if l.pos[p] < end {
				behind = true
				break
			}
		}
		changed, lastErr, renamed := l.changed, l.err, l.renamed
		l.renamed = false
		l.mu.Unlock()
		if !behind {
			return nil
		}
		if renamed {
			// The reader's fetches name a topic id the broker no longer
			// has: the topic was created anew under the same name.
			l.startOver("the topic was created anew (its id changed)")
			continue
		}
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond): // renamed is set without a change
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("changelog: read %s: %w (%v)", l.cfg.Topic, ctx.Err(), lastErr)
			}
			return fmt.Errorf("changelog: read %s: %w", l.cfg.Topic, ctx.Err())
		}
	}
}

// Get returns the value of key in the view.
func (l *Log) Get(key string) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.values[key]
	return v, ok
}

// Keys returns the keys of a group in the view, sorted, and the writer of
// the group's latest record ("" for a group the view does not hold).
func (l *Log) Keys(g string) ([]string, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gs := l.groups[g]
	if gs == nil {
		return nil, ""
	}
	keys := slices.Clone(gs.keys)
	slices.Sort(keys)
	return keys, gs.writer
}

// Groups calls fn with every group the view holds keys of, and its
// latest writer.
func (l *Log) Groups(fn func(group, writer string)) {
	l.mu.Lock()
	type gw struct{ g, w string }
	all := make([]gw, 0, len(l.groups))
	for g, gs := range l.groups {
		if len(gs.keys) > 0 {
			all = append(all, gw{g, gs.writer})
		}
	}
	l.mu.Unlock()
	for _, x := range all {
		fn(x.g, x.w)
	}
}

// GroupsFrom returns the groups the view holds keys of whose latest
// source is source, with their latest writer, sorted.
func (l *Log) GroupsFrom(source string) (groups, writers []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for g, gs := range l.groups {
		if gs.source == source && len(gs.keys) > 0 {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	for _, g := range groups {
		writers = append(writers, l.groups[g].writer)
	}
	return groups, writers
}

// DrainForeign returns the groups that another incarnation wrote since
// the last call and whose latest record is still not this one's.
func (l *Log) DrainForeign() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.foreign) == 0 {
		return nil
	}
	var out []string
	for g := range l.foreign {
		gs := l.groups[g]
		if gs == nil || gs.writer == l.writer {
			continue
		}
		out = append(out, g)
		if len(gs.keys) == 0 {
			delete(l.groups, g) // deleted by its owner: nothing left to tell
		}
	}
	clear(l.foreign)
	slices.Sort(out)
	return out
}

// startOver forgets what the client knew of the topic (its id, its
// partitions, the positions read), so that the producer and the view find
// the topic created anew and read it from its start. The view keeps its
// values — what the topic held last — so that their writers can write them
// again (Lost).
func (l *Log) startOver(why string) {
	l.swap.Lock()
	defer l.swap.Unlock()
	// A new producer, with a new producer id (its sequence numbers start
	// over with the topic's partitions), and a new reader (below) that
	// knows nothing of the old topic's id and offsets.
	prod, err := l.cfg.producer()
	if err != nil {
		l.mu.Lock()
		l.lost = why
		l.mu.Unlock()
		return // the next Sync finds it again, and tries again
	}
	if !l.swapReader(func() {
		l.lost, l.renamed = why, false
		clear(l.pos) // the view keeps its values: the last the topic held, for writing again
	}) {
		prod.Close()
		l.mu.Lock()
		l.lost = why
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	oldProd := l.prod
	l.prod = prod
	l.mu.Unlock()
	oldProd.Close() // its writes in flight fail, and their passes are retried
}

// swapReader stops the reader, applies change to the view (under mu), and
// starts a new reader on what the view reads then (reads), from where it
// is: the old reader's records are all applied or never, so no record of
// a partition comes twice or from before a purge. It reports false, and
// changes nothing, when no new client could be made. Callers hold swap.
func (l *Log) swapReader(change func()) bool {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.cl
	change()
	l.publish()
	cl, err := l.cfg.reader(l.reads())
	if err != nil {
		l.logger.Warn("Changelog reader could not be made again; retrying", zap.String("topic", l.cfg.Topic), zap.Error(err))
		cl = old // reads on as before; change is applied, the next swap tries again
	} else {
		l.cl, l.adm = cl, kadm.NewClient(cl)
	}
	l.startReading()
	if cl != old {
		go old.Close()
	}
	return err == nil
}

// Follow makes the view read the partitions of sources, from their start
// (with BySource; without, it reads every partition anyway). A Sync after
// it waits until they are read to their end.
func (l *Log) Follow(sources ...string) {
	l.swap.Lock()
	defer l.swap.Unlock()
	l.mu.Lock()
	var add []string
	reading := map[int32]bool{}
	for _, p := range l.follow {
		reading[p] = true
	}
	newParts := false
	for _, src := range sources {
		if _, ok := l.follow[src]; ok || l.all {
			continue
		}
		add = append(add, src)
		if p := l.partitionOfSource(src); !reading[p] {
			reading[p], newParts = true, true
		}
	}
	if !newParts {
		for _, src := range add {
			l.follow[src] = l.partitionOfSource(src)
		}
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.swapReader(func() {
		for _, src := range add {
			p := l.partitionOfSource(src)
			if !l.readsPartition(p) {
				l.pos[p] = 0 // from its start
			}
			l.follow[src] = p
		}
	})
}

// FollowAll makes the view read every partition from now on.
func (l *Log) FollowAll() {
	l.swap.Lock()
	defer l.swap.Unlock()
	l.mu.Lock()
	all := l.all
	l.mu.Unlock()
	if all {
		return
	}
	l.swapReader(func() {
		l.all = true
		// What was read already is read again, from the start: a
		// partition's records apply in their order, once from the start.
		clear(l.pos)
	})
}

// Unfollow stops following sources: a partition no source followed maps to
// any more is no longer read, and its groups leave the view.
func (l *Log) Unfollow(sources ...string) {
	l.swap.Lock()
	defer l.swap.Unlock()
	l.mu.Lock()
	if l.all {
		l.mu.Unlock()
		return
	}
	gone := map[int32]bool{}
	for _, src := range sources {
		if p, ok := l.follow[src]; ok {
			delete(l.follow, src)
			gone[p] = true
		}
	}
	for _, p := range l.follow {
		delete(gone, p) // still read for another source
	}
	l.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	l.swapReader(func() {
		for g, gs := range l.groups {
			if !gone[gs.part] {
				continue
			}
			for _, k := range gs.keys {
				l.bytes -= int64(len(l.values[k]))
				delete(l.values, k)
			}
			delete(l.groups, g)
			delete(l.foreign, g)
		}
		for p := range gone {
			delete(l.pos, p)
		}
	})
}

// readsPartition reports whether the view reads partition p. Callers hold mu.
func (l *Log) readsPartition(p int32) bool {
	if l.all {
		return true
	}
	for _, q := range l.follow {
		if q == p {
			return true
		}
	}
	return false
}

// partitionOfSource is the partition a source's records go to, as the
// producer's partitioner picks it. Callers hold mu.
func (l *Log) partitionOfSource(src string) int32 {
	n, ok := sourcePartition(src)
	if !ok || l.parts <= 0 {
		return 0
	}
	return int32(n % int(l.parts))
}

// PartitionOf is the changelog partition a source's records go to, and
// whether it is shared with a source of a lower partition number (the
// changelog has fewer partitions than the source topic).
func (l *Log) PartitionOf(src string) (p int32, shared bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, _ := sourcePartition(src)
	return l.partitionOfSource(src), l.parts > 0 && n >= int(l.parts)
}

// Owners asks the group coordinator which member of consumer group owns
// each partition: "topic/N" → the member's group.instance.id (its member
// id without one). stable is false while the group rebalances, or is
// empty; static is whether any member has an instance id.
func (l *Log) Owners(ctx context.Context, group string) (owners map[string]string, stable, static bool, err error) {
	l.mu.Lock()
	adm := l.adm
	l.mu.Unlock()
	gs, err := adm.DescribeGroups(ctx, group)
	if err == nil {
		err = gs.Error()
	}
	if err != nil {
		return nil, false, false, fmt.Errorf("changelog: describe consumer group %s: %w", group, err)
	}
	owners = map[string]string{}
	for _, g := range gs {
		stable = g.State == "Stable" && len(g.Members) > 0
		for _, m := range g.Members {
			id := m.MemberID
			if m.InstanceID != nil {
				id, static = *m.InstanceID, true
			}
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					for _, p := range t.Partitions {
						owners[t.Topic+"/"+strconv.Itoa(int(p))] = id
					}
				}
			}
		}
	}
	return owners, stable, static, nil
}

// Following returns how many partitions the view reads, and of how many.
func (l *Log) Following() (reads, of int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.all {
		return int(l.parts), int(l.parts)
	}
	ps := map[int32]bool{}
	for _, p := range l.follow {
		ps[p] = true
	}
	return len(ps), int(l.parts)
}

// Lost returns why the topic was found lost (deleted and created again, or
// gone) since the last call, or "": the view's partitions named are read
// again from their start, and what the topic held before is gone from it.
func (l *Log) Lost() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	why := l.lost
	l.lost = ""
	return why
}

// Stats returns what this process wrote so far.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// publish stores what the view holds for View. Callers hold mu.
func (l *Log) publish() {
	l.viewGroups.Store(int64(len(l.groups)))
	l.viewBytes.Store(l.bytes)
	ps := map[int32]bool{}
	for _, p := range l.follow {
		ps[p] = true
	}
	if l.all {
		l.viewParts.Store(int64(l.parts))
	} else {
		l.viewParts.Store(int64(len(ps)))
	}
}

// View returns, without waiting for a change in progress, the groups the
// view holds, the bytes of their values and the partitions it reads, as
// they were after the latest change.
func (l *Log) View() (groups, bytes, partitions int64) {
	return l.viewGroups.Load(), l.viewBytes.Load(), l.viewParts.Load()
}

// Size returns the keys in the view, the groups they belong to and the
// bytes of their values.
func (l *Log) Size() (keys, groups int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.values), len(l.groups), l.bytes
}

// Close stops reading and closes the client; pending writes have
// returned already (Write waits for them).
func (l *Log) Close() {
	l.cancel()
	<-l.done
	l.cl.Close()
	l.mu.Lock()
	prod := l.prod
	l.mu.Unlock()
	prod.Close()
}

// run reads the topic into the view until ctx ends.
func (l *Log) run(ctx context.Context, cl *kgo.Client, done chan struct{}) {
	defer close(done)
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			l.reading.Strike(ferr, zap.String("topic", l.cfg.Topic))
		}
		l.mu.Lock()
		if ferr != nil {
			l.err = ferr
			if errors.Is(ferr, kerr.UnknownTopicID) {
				l.renamed = true
			}
		}
		moved := false
		fs.EachRecord(func(r *kgo.Record) {
			if !l.readsPartition(r.Partition) {
				return // a partition no longer followed (not read after the swap)
			}
			if r.Offset+1 < l.pos[r.Partition] {
				// Offsets never go back in a topic that keeps its
				// records: this one was deleted and created again.
				l.lost = fmt.Sprintf("partition %d started over at offset %d after %d", r.Partition, r.Offset, l.pos[r.Partition]-1)
			}
			l.apply(r)
			l.pos[r.Partition] = r.Offset + 1
			moved = true
		})
		if moved && ferr == nil {
			l.reading.Clear()
		}
		if moved {
			close(l.changed)
			l.changed = make(chan struct{})
			l.publish()
		}
		l.mu.Unlock()
	}
}

// intern returns a writer id or a source as one string per value: the view
// holds one per group, and a group's writer is one of few. Callers hold mu.
func (l *Log) intern(b []byte) string {
	if w, ok := l.writers[string(b)]; ok {
		return w
	}
	w := string(b)
	l.writers[w] = w
	return w
}

// apply brings the view up to date with one record. Callers hold mu.
func (l *Log) apply(r *kgo.Record) {
	key := string(r.Key)
	var writer, source string
	for _, h := range r.Headers {
		switch h.Key {
		case WriterHeader:
			writer = l.intern(h.Value)
		case SourceHeader:
			source = l.intern(h.Value)
		}
	}
	g := l.cfg.Group(key)
	gs := l.groups[g]
	if gs == nil {
		gs = &group{}
		l.groups[g] = gs
	}
	gs.writer, gs.part = writer, r.Partition
	if source != "" {
		gs.source = source
	}
	l.bytes -= int64(len(l.values[key]))
	if r.Value == nil {
		delete(l.values, key)
		gs.drop(key)
	} else {
		l.values[key] = slices.Clone(r.Value) // not a view into the fetch's buffer
		l.bytes += int64(len(r.Value))
		gs.add(key)
	}
	if writer != l.writer {
		l.foreign[g] = struct{}{}
	} else if len(gs.keys) == 0 {
		delete(l.groups, g)
	}
}
