package journal

// This file is what an instance knows of the session topic's partitions it
// consumes: the offsets that spare the read barrier, the changelog partitions
// its view follows, and, with consumer_group, what the group coordinator says
// is its own.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/client"
	"go.uber.org/zap"
)

// positions skip the read barrier while ownership has not changed. The
// kafka receiver puts each message's topic, partition and offset in the
// client metadata of the context it calls ConsumeLogs with. A batch whose
// offset directly follows the last one this instance consumed from that
// partition was not preceded by anyone else's: no other instance consumed
// the partition in between (it would have started at the committed offset,
// past ours, and we would start past its), so no session of the batch can
// have a changelog write that this instance has not made itself. Only the
// first batch of a partition after an assignment, a gap (a message
// consumed elsewhere, a retried batch, a transaction marker) or a batch
// without the metadata (another receiver, a processor that regroups)
// waits for the barrier.
type positions map[partitionKey]int64

type partitionKey struct {
	topic     string
	partition string
}

// follows reports whether the batch of ctx directly follows the last batch
// consumed from its partition, and records it as the last; source names
// the partition ("topic/partition"; "" without the metadata).
func (ps positions) follows(ctx context.Context) (follows bool, source string) {
	md := client.FromContext(ctx).Metadata
	topic, part, off := md.Get("kafka.topic"), md.Get("kafka.partition"), md.Get("kafka.offset")
	if len(topic) != 1 || len(part) != 1 || len(off) != 1 {
		return false, ""
	}
	o, err := strconv.ParseInt(off[0], 10, 64)
	if err != nil {
		return false, ""
	}
	k := partitionKey{topic[0], part[0]}
	last, seen := ps[k]
	ps[k] = o
	return seen && o == last+1, topic[0] + "/" + part[0]
}

// forget forgets the last batch consumed from a source ("topic/partition"):
// the next batch of it reads the changelog and restores the partition. It
// reports whether this instance had consumed from it.
func (ps positions) forget(source string) bool {
	i := strings.LastIndexByte(source, '/')
	if i < 0 {
		return false
	}
	k := partitionKey{source[:i], source[i+1:]}
	_, ok := ps[k]
	delete(ps, k)
	return ok
}

// sources lists the partitions ("topic/partition") this instance consumed
// from, or adopted.
func (ps positions) sources() []string {
	out := make([]string, 0, len(ps))
	for k := range ps {
		out = append(out, k.topic+"/"+k.partition)
	}
	slices.Sort(out)
	return out
}

// has reports whether this instance consumed from a partition, or
// adopted it.
func (ps positions) has(source string) bool {
	i := strings.LastIndexByte(source, '/')
	_, ok := ps[partitionKey{source[:max(i, 0)], source[i+1:]}]
	return ok
}

// adopted marks a partition taken without a batch (askCoordinator): no
// offset follows it.
const adopted = -2

// adopt records a partition as this instance's before any batch of it.
func (ps positions) adopt(source string) {
	i := strings.LastIndexByte(source, '/')
	if i >= 0 {
		ps[partitionKey{source[:i], source[i+1:]}] = adopted
	}
}

// follows records the batch of ctx against its partition's last (positions).
func (c *Changelog) follows(ctx context.Context) (bool, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.positions.follows(ctx)
}

// adopt makes partitions the coordinator says are this instance's, of
// which no batch came yet, this instance's: the view reads them, and the
// first batch of each still reads the changelog again (its offset does not
// follow).
func (c *Changelog) adopt(sources []string) {
	c.mu.Lock()
	for _, src := range sources {
		c.positions.adopt(src)
	}
	c.mu.Unlock()
	c.log.Follow(sources...)
}

// follow makes the view read what a batch of source needs: the changelog
// partition of the session topic's partition it comes from, or, for a
// batch without the kafka receiver's metadata, every partition (then for
// good, and the sessions an earlier start of this owner wrote last are
// resumed, as a start with the whole view would).
func (c *Changelog) follow(source string) {
	if source == "" {
		c.mu.Lock()
		first := !c.readsAll
		c.readsAll, c.resumeOwn = true, c.resumeOwn || first
		c.mu.Unlock()
		if first {
			c.log.FollowAll()
			c.Logger.Warn("Changelog: a batch came without the kafka receiver's partition metadata, so this instance cannot tell "+
				"which sessions are its partitions': its view reads the whole changelog from now on (memory for every session of the group)",
				zap.String("topic", c.opts.Log.Topic))
		}
		return
	}
	c.log.Follow(source)
	p, shared := c.log.PartitionOf(source)
	c.mu.Lock()
	warn := shared && !c.warnedShared
	c.warnedShared = c.warnedShared || shared
	c.mu.Unlock()
	if warn {
		c.Logger.Warn("Changelog: the session topic has more partitions than the changelog, so partitions share a changelog partition, "+
			"and an instance reads the sessions of partitions it does not consume. Give the changelog as many partitions as the session topic "+
			"(a new topic: partitions cannot be added to it)",
			zap.String("source", source), zap.Int32("changelog_partition", p))
	}
}

// dropPartitions lets go of every session of the session-topic partitions
// this instance consumed that another instance consumes now, and stops
// reading their changelog; the next batch of one, if it comes back, reads
// it again. It runs under the core's state lock.
func (c *Changelog) dropPartitions(e Engine, sources []string, h *handed) {
	var dropped []string
	for _, src := range sources {
		c.mu.Lock()
		had := c.positions.forget(src)
		var ids []string
		if had {
			for id, s := range c.source {
				if s == src {
					ids = append(ids, id)
				}
			}
		}
		c.mu.Unlock()
		if !had {
			continue
		}
		for _, id := range ids {
			h.add(c.letGo(e, id))
		}
		dropped = append(dropped, src)
	}
	if len(dropped) > 0 {
		slices.Sort(dropped)
		c.log.Unfollow(dropped...)
		c.Logger.Info("Partitions consumed by another instance now: their sessions let go of, their changelog no longer read here",
			zap.Strings("partitions", dropped))
	}
}

// ownership is what the group coordinator said of the session topic's
// partitions: those this instance consumed that another member owns now
// (moved), those it owns and has had no batch of (adopted: their open
// turns are restored now, so that they close as dangling here even if the
// partition stays quiet), and the partitions of turns due to close as
// dangling that no member, or not this instance, is known to own (held:
// their turns wait for a later sweep).
type ownership struct {
	moved, adopted []string
	held           map[string]bool
}

// askEvery bounds how often a sweep asks the group coordinator when it has
// no turn to close: often enough that a quiet partition's open turns are
// adopted by its new owner soon after a move.
const askEvery = 5 * time.Second

// askCoordinator asks the group coordinator, when consumer_group is set,
// who owns the session topic's partitions: at once when turns are due to
// close as dangling (now, or within a sweep interval of it), else every
// askEvery. A turn is closed only while this instance owns its partition:
// one whose partition moved is its new owner's to close or carry on, even
// before that one wrote it; and a partition that is this instance's is
// read and its open turns restored though no batch of it came.
func (c *Changelog) askCoordinator(ctx context.Context, peek Peek) (ownership, error) {
	var o ownership
	c.mu.Lock()
	readsAll := c.readsAll
	c.mu.Unlock()
	group := c.opts.ConsumerGroup
	if readsAll || group == "" {
		return o, nil
	}
	now := c.opts.Clock()
	var due []string
	peek(func(e Engine) { due = e.Due(now.Add(c.opts.SweepInterval)) })
	sources := map[string]bool{}
	for _, id := range due {
		if src := c.sourceOf(id); src != "" {
			sources[src] = true
		}
	}
	c.mu.Lock()
	asked := c.asked
	c.mu.Unlock()
	if len(sources) == 0 && now.Sub(asked) < askEvery {
		return o, nil
	}
	owners, stable, static, err := c.log.Owners(ctx, group)
	if err != nil {
		return o, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = now
	if !static {
		if !c.warnedStatic {
			c.warnedStatic = true
			c.Logger.Warn("changelog::consumer_group is set, but no member of the group has a group_instance_id: "+
				"the coordinator cannot tell this instance's partitions; dangling turns are closed without asking it. "+
				"Give the kafka receiver group_instance_id equal to changelog::owner",
				zap.String("consumer_group", group))
		}
		return o, nil
	}
	owner := c.opts.Log.Owner
	o.held = map[string]bool{}
	for src := range sources {
		if o2 := owners[src]; !stable || o2 != owner {
			o.held[src] = true // a rebalance, nobody's or another's: not ours to close
		}
	}
	if !stable {
		return o, nil
	}
	for _, src := range c.positions.sources() {
		if o2 := owners[src]; o2 != "" && o2 != owner {
			o.moved = append(o.moved, src)
		}
	}
	for src, o2 := range owners {
		if o2 == owner && !c.positions.has(src) {
			o.adopted = append(o.adopted, src)
		}
	}
	slices.Sort(o.moved)
	slices.Sort(o.adopted)
	return o, nil
}
