package changelog

// This file reads the changelog into the view: the reader, the partitions
// it follows, the read up to the end (Sync), and a topic found lost.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
)

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

// startReading starts the loop that reads the topic into the view with
// l.cl.
func (l *Log) startReading() {
	runCtx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(runCtx, l.cl, l.done)
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
			l.mu.Lock()
			adm = l.adm // startOver closes the client it replaces
			l.mu.Unlock()
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
	l.mu.Lock()
	adm := l.adm
	l.mu.Unlock()
	if l.createdAnew(ctx, adm) {
		// The topic was deleted and created again since the last Sync,
		// whatever the offsets say (they can reach what the view read
		// before: other writers, or this instance's own writes since):
		// read it anew, and list its ends again.
		l.startOver("the topic was created anew (its id changed)")
		return l.Sync(ctx)
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

// createdAnew reports whether the topic's id differs from the one the last
// Sync found (and remembers the id found now). A failed look-up, or a
// broker without topic ids, reports false: the offsets' checks remain.
func (l *Log) createdAnew(ctx context.Context, adm *kadm.Client) bool {
	topics, err := adm.ListTopics(ctx, l.cfg.Topic)
	if err != nil {
		return false
	}
	d, ok := topics[l.cfg.Topic]
	if !ok || d.Err != nil || d.ID == (kadm.TopicID{}) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.topicID
	l.topicID = d.ID
	return prev != (kadm.TopicID{}) && prev != d.ID
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
