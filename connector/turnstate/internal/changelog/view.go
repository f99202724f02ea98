package changelog

// This file is the view: what the changelog held when last read, by key
// and by group, and what it tells of other incarnations' writes.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
)

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
