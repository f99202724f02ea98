package sessionlog

import (
	"os"
	"sync"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// An Arena recycles the memory of decoded rows for a caller that is done
// with every row of a batch before it decodes the next batch: the rows,
// events, details and chunks a RowDecoder hands out while the arena is set
// (SetArena) are carved out of blocks the arena keeps, and Reset makes all
// of them free again at once. A batch then costs no allocation once the
// blocks have grown to its size, and the garbage collector has nothing of
// it to sweep.
//
// Reset invalidates every Row, Event, Detail and Chunk decoded since the
// last Reset. Whoever keeps an event past it must keep a copy (Event.Own).
// The row bytes are not the arena's: they stay the caller's. The zero Arena
// is ready to use; it is not safe for concurrent use.
type Arena struct {
	rows     slab[Row]
	events   slab[Event]
	details  slab[Detail]
	chunks   slab[Chunk]
	usages   slab[Usage]
	finishes slab[Finish]
	streams  slab[Stream]
	seqs     slab[int64]

	// tape is the parse scratch of the decoders the arena is set on (one
	// row at a time, as the arena is used): no pool round trip per row.
	tape *jsontape.Tape
}

// parseTape is the arena's tape, made at first use.
func (a *Arena) parseTape() *jsontape.Tape {
	if a.tape == nil {
		a.tape = new(jsontape.Tape)
	}
	return a.tape
}

// Reset frees everything handed out since the last Reset.
func (a *Arena) Reset() {
	p := poisoned()
	if p { // overwritten, not cleared: take clears what it hands out
		a.rows.fill(Row{Kind: RowInvalid, Line: -1, SessionID: freed})
		a.events.fill(Event{Type: freed, Seq: -freedNumber, Time: -freedNumber, Turn: -freedNumber, Step: -freedNumber, Detail: freedDetail})
		a.details.fill(*freedDetail)
		a.chunks.fill(Chunk{Type: freed, Index: -freedNumber, DeltaBytes: -1})
		a.usages.fill(Usage{InputTokens: -freedNumber, OutputTokens: -freedNumber, TotalTokens: -freedNumber})
		a.finishes.fill(Finish{Kind: freed})
		a.streams.fill(Stream{Records: -1, Chunks: -1, FirstTime: -freedNumber, LastTime: -freedNumber})
		a.seqs.fill(-freedNumber)
	}
	a.rows.reset(!p)
	a.events.reset(!p)
	a.details.reset(!p)
	a.chunks.reset(!p)
	a.usages.reset(!p)
	a.finishes.reset(!p)
	a.streams.reset(!p)
	a.seqs.reset(!p)
	if a.tape != nil {
		a.tape.Reset() // no row held
	}
}

// With DSH_ARENA_POISON=1 in the environment (tests set it), Reset first
// overwrites what it frees with values no log has, so that a row or event
// kept past its batch shows in the spans and checks built from it instead
// of reading as zeros.
var (
	poisonOnce sync.Once
	poison     bool
)

func poisoned() bool {
	poisonOnce.Do(func() { poison = os.Getenv("DSH_ARENA_POISON") == "1" })
	return poison
}

const (
	freed       = "\x00arena:freed"
	freedNumber = 1 << 40
)

var freedDetail = &Detail{CallID: freed, ToolName: freed, Provider: freed, Model: freed, MessageID: freed,
	Reason: Reason{Kind: freed}, Usage: &Usage{InputTokens: -freedNumber}}

// A slab's first block holds arenaFirst values, each next one twice the
// one before, up to arenaBlock, or as many as one request needs: an arena
// that serves one row at a time stays small, and one that served a long
// packed row keeps its block for the next. A request for more than
// arenaKeep values gets an allocation of its own, not kept.
const (
	arenaFirst = 8
	arenaBlock = 512
	arenaKeep  = 1 << 16
)

// slab hands out zeroed runs of T from blocks it reuses after reset.
type slab[T any] struct {
	blocks [][]T
	used   []int // per block, how much of it was handed out since reset
	b, i   int   // the block in use and the next free index in it
}

func (s *slab[T]) take(n int) []T {
	if n > arenaKeep {
		return make([]T, n)
	}
	for {
		if s.b == len(s.blocks) {
			size := arenaFirst
			if k := len(s.blocks); k > 0 {
				size = min(2*len(s.blocks[k-1]), arenaBlock)
			}
			s.blocks = append(s.blocks, make([]T, max(size, n)))
			s.used = append(s.used, 0)
		}
		if blk := s.blocks[s.b]; s.i+n <= len(blk) {
			out := blk[s.i : s.i+n : s.i+n]
			if poisoned() { // a poisoned reset filled it; otherwise reset zeroed it
				clear(out)
			}
			s.i += n
			s.used[s.b] = s.i
			return out
		}
		s.b, s.i = s.b+1, 0
	}
}

func (s *slab[T]) one() *T { return &s.take(1)[0] }

// fill overwrites what was handed out with v.
func (s *slab[T]) fill(v T) {
	for k, n := range s.used {
		blk := s.blocks[k][:n]
		for x := range blk {
			blk[x] = v
		}
	}
}

// reset makes the blocks free again; with zero, it also zeroes what was
// handed out, so that the old values hold no memory alive.
func (s *slab[T]) reset(zero bool) {
	if s.b == 0 && s.i == 0 {
		return // nothing handed out since the last reset
	}
	// Blocks are handed out in order: only those up to the one in use
	// have anything to free.
	for k := range s.used[:s.b+1] {
		if zero {
			clear(s.blocks[k][:s.used[k]])
		}
		s.used[k] = 0
	}
	s.b, s.i = 0, 0
}

// Own returns a copy of the event that no Arena's Reset affects: its row
// (with all the row's events), detail, chunk, stream and usages are copied;
// strings and row bytes are shared, as they are not the arena's.
func (e *Event) Own() *Event {
	if e.Row == nil {
		c := *e
		c.own()
		return &c
	}
	r := *e.Row
	r.Events = make([]Event, len(e.Row.Events))
	copy(r.Events, e.Row.Events)
	r.Problems = append([]Violation(nil), r.Problems...)
	for k := range r.Events {
		r.Events[k].Row = &r
		r.Events[k].own()
	}
	return &r.Events[e.Member]
}

// own replaces the event's pointers into its decoder's memory with copies.
func (e *Event) own() {
	if e.Detail != nil && e.Detail != noDetail {
		d := *e.Detail
		d.Usage = ownUsage(d.Usage)
		d.Reason.Failure = ownPtr(d.Reason.Failure)
		d.Failure = ownPtr(d.Failure)
		d.Advertised = append([]ToolCallRef(nil), d.Advertised...)
		e.Detail = &d
	}
	if e.Chunk != nil {
		c := *e.Chunk
		c.Usage = ownUsage(c.Usage)
		if c.Finish != nil {
			f := *c.Finish
			f.Failure = ownPtr(f.Failure)
			c.Finish = &f
		}
		e.Chunk = &c
	}
	if e.Stream != nil {
		s := *e.Stream
		s.Usage = ownUsage(s.Usage)
		if s.Finish != nil {
			f := *s.Finish
			f.Failure = ownPtr(f.Failure)
			s.Finish = &f
		}
		e.Stream = &s
	}
	e.Sources = append([]int64(nil), e.Sources...)
}

func ownUsage(u *Usage) *Usage { return ownPtr(u) }

func ownPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
