package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// item is a held row: the seqs it occupies and the lines that write it.
type item struct {
	first, last int64
	lines       [][]byte
	// packed: one packed chunk row standing for first..last (docs/format.md §5.1).
	packed bool
}

func newItem(r *Row) *item {
	return &item{first: r.First, last: r.Last, lines: r.Lines, packed: r.Packed}
}

// tail is the part of the item from seq from on, or nil when it cannot be
// split. A packed row splits into the assistant/chunk events its members
// stand for — loose chunk events are as valid in a v0/v1 file as packed
// ones — which only happens when two deliveries of a session packed the
// same chunks differently.
func (it *item) tail(from int64) *item {
	if from <= it.first {
		return it
	}
	if from > it.last {
		return nil
	}
	if !it.packed {
		if int64(len(it.lines)) != it.last-it.first+1 {
			return nil
		}
		return &item{first: from, last: it.last, lines: it.lines[from-it.first:]}
	}
	lines := expandPacked(it.lines[0], from)
	if int64(len(lines)) != it.last-from+1 {
		return nil
	}
	return &item{first: from, last: it.last, lines: lines}
}

// expandPacked writes the members of a packed chunk row from seq from on
// as the assistant/chunk events they stand for (docs/format.md §5.1), in the key order
// dsh writes (type, seq, time, data; chunk type, index, text or id, name,
// argumentsDelta).
func expandPacked(line []byte, from int64) [][]byte {
	row, err := sessionlog.NewRowDecoder(0, 0).Decode(append([]byte(nil), line...), 1)
	if err != nil || row.Kind != sessionlog.RowPacked {
		return nil
	}
	var raw struct {
		Data struct {
			Texts []string `json:"texts"`
			Args  []string `json:"args"`
			Name  *string  `json:"name"`
		} `json:"data"`
	}
	if json.Unmarshal(line, &raw) != nil {
		return nil
	}
	members := raw.Data.Texts
	if members == nil {
		members = raw.Data.Args
	}
	var out [][]byte
	for i := range row.Events {
		e := &row.Events[i]
		if e.Seq < from {
			continue
		}
		if e.Member >= len(members) || e.Chunk == nil {
			return nil
		}
		b := fmt.Appendf(nil, `{"type":"assistant/chunk","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"chunk":{"type":%s,"index":%d,`,
			e.Seq, e.Time, e.Turn, e.Step, jsonString(e.Chunk.Type), e.Chunk.Index)
		if e.Chunk.Type == "tool-call-delta" {
			b = fmt.Appendf(b, `"id":%s,`, jsonString(e.Chunk.ID))
			if raw.Data.Name != nil {
				b = fmt.Appendf(b, `"name":%s,`, jsonString(*raw.Data.Name))
			}
			b = fmt.Appendf(b, `"argumentsDelta":%s}}}`, jsonString(members[e.Member]))
		} else {
			b = fmt.Appendf(b, `"text":%s}}}`, jsonString(members[e.Member]))
		}
		out = append(out, b)
	}
	return out
}

// jsonString encodes s as JSON.stringify does (no HTML escaping).
func jsonString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// hold keeps an item until its seq is next; one that is behind what was
// written, or already held, is a duplicate.
func (a *Archive) hold(g *gen, it *item) {
	if it.last < g.next {
		a.obs.Duplicates(1)
		return
	}
	if it.first < g.next {
		t := it.tail(g.next)
		if t == nil {
			a.obs.Duplicates(1)
			return
		}
		it = t
	}
	if ex := g.held[it.first]; ex != nil {
		a.obs.Duplicates(1)
		if it.last <= ex.last {
			return
		}
		a.pending-- // the longer row replaces the shorter
	}
	if g.held == nil {
		g.held = map[int64]*item{}
	}
	g.held[it.first] = it
	a.pending++
}

// planned is an item to write and the held keys it settles.
type planned struct {
	it   *item
	keys []int64
	dups int64
}

// plan collects the held items that continue the file from g.next, in
// order. Nothing changes until commit.
func (a *Archive) plan(g *gen) []planned {
	var out []planned
	seq := g.next
	var tails map[int64]*item
	for {
		p := planned{it: g.held[seq]}
		if p.it != nil {
			p.keys = append(p.keys, seq)
		}
		if t := tails[seq]; t != nil {
			if p.it == nil || t.last > p.it.last {
				if p.it != nil {
					p.dups++
				}
				p.it = t
			} else {
				p.dups++
			}
		}
		if p.it == nil {
			return out
		}
		// Held rows starting inside this one overlap it: packed and loose
		// deliveries of the same chunks. What they add beyond it comes next.
		for k := p.it.first + 1; k <= p.it.last; k++ {
			o := g.held[k]
			if o == nil {
				continue
			}
			p.keys = append(p.keys, k)
			p.dups++
			if o.last > p.it.last {
				if t := o.tail(p.it.last + 1); t != nil {
					if tails == nil {
						tails = map[int64]*item{}
					}
					if cur := tails[t.first]; cur == nil || t.last > cur.last {
						tails[t.first] = t
					}
				}
			}
		}
		out = append(out, p)
		seq = p.it.last + 1
	}
}

// commit applies written items: their keys leave the held set, next moves on.
func (a *Archive) commit(g *gen, done []planned) {
	for _, p := range done {
		for _, k := range p.keys {
			if _, ok := g.held[k]; ok {
				delete(g.held, k)
				a.pending--
			}
		}
		if p.dups > 0 {
			a.obs.Duplicates(p.dups)
		}
		g.next = p.it.last + 1
	}
	a.prune(g) // held rows the written ones made obsolete
}

// wait keeps the waiting set in step with g's held rows: a generation that
// holds rows waits, and progress starts a new wait for the next gap.
func (a *Archive) wait(g *gen, now time.Time, progressed bool) {
	if len(g.held) == 0 {
		a.unwait(g)
		return
	}
	if _, ok := a.waiting[g]; !ok || progressed {
		a.waiting[g] = struct{}{}
		g.waitSince = now
	}
}

// drain writes what g can write now: its header if due, then the held
// rows that continue the file.
func (a *Archive) drain(g *gen, now time.Time) error {
	g = a.current(g)
	if g.broken {
		if err := a.reload(g); err != nil {
			return err
		}
	}
	switch {
	case g.hdr != nil:
		if err := a.writeHeader(g); err != nil {
			if dropped := a.dropIfPath(g, err); dropped {
				return nil
			}
			return err
		}
	case g.awaitingHeader():
		a.wait(g, now, false) // a file's rows wait for its header
		return nil
	}
	steps := a.plan(g)
	if len(steps) == 0 {
		a.wait(g, now, false)
		return nil
	}
	if g.isStream && g.path == "" {
		target, err := a.createStream(g)
		if err != nil {
			if dropped := a.dropIfPath(g, err); dropped {
				return nil
			}
			return err
		}
		if target != g {
			return a.drain(target, now)
		}
		steps = a.plan(g) // the file may have existed already
		if len(steps) == 0 {
			a.wait(g, now, false)
			return nil
		}
	}
	return a.write(g, steps, now)
}

// write appends the planned steps' rows to the generation's file and
// commits them: with fsync always each step durably before the next (a
// failure commits the steps before it), else all in one write.
func (a *Archive) write(g *gen, steps []planned, now time.Time) error {
	if a.opts.Fsync == FsyncAlways {
		for i, p := range steps {
			if err := a.writeLines(g, p.it.lines); err != nil {
				a.commit(g, steps[:i])
				a.wait(g, now, i > 0)
				return err
			}
		}
	} else {
		var lines [][]byte
		for _, p := range steps {
			lines = append(lines, p.it.lines...)
		}
		if err := a.writeLines(g, lines); err != nil {
			a.wait(g, now, false)
			return err
		}
	}
	a.commit(g, steps)
	a.wait(g, now, true)
	return nil
}
