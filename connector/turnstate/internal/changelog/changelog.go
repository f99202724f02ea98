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
	"strings"
	"sync"
	"sync/atomic"

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
	// Compression is the codec of the records written: none, gzip,
	// snappy, lz4 or zstd ("": lz4). Readers take any.
	Compression string
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
	// topicID is the topic's id as Sync last found it (zero: not yet, or a
	// broker without ids): another id is the topic created anew.
	topicID kadm.TopicID

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
