package replay

import (
	"io"
	"runtime"
	"sync"
)

// A session's blocks — its turns and the rows between them — are most of
// a page. Workers render runs of consecutive blocks in parallel (a run's
// rows are mostly in the same frames of the rows' bytes, inflated once),
// and the runs are written in order as they are done, at most a window of
// them rendered ahead: the page streams, never held whole.

// blocks writes a session's blocks, each on its line.
func (r *renderer) blocks(w io.Writer, sv *sessionView) error {
	workers := min(runtime.GOMAXPROCS(0), 8, len(sv.Blocks))
	q := &runs{jobs: make(chan run), ahead: make(chan chan runResult, 4*workers), stop: make(chan struct{})}
	q.bufs.New = func() any { return new(hbuf) }
	defer q.close()
	q.wg.Go(func() { q.dispatch(sv.Blocks) })
	for range workers {
		rw := &renderer{p: r.p, o: r.o, s: sv.S, childAt: sv.childAt, raw: rawReader{rows: &r.p.rows}}
		q.wg.Go(func() { rw.work(q, sv) })
	}
	return q.write(w)
}

// runs is the writing of one session's blocks: the runs handed out, the
// places their results go in order, and the buffers they are rendered in.
type runs struct {
	jobs  chan run
	ahead chan chan runResult
	stop  chan struct{}
	bufs  sync.Pool
	wg    sync.WaitGroup
}

// run is consecutive blocks, and where their rendering goes.
type run struct {
	blocks []*Block
	done   chan<- runResult
}

// runResult is a rendered run.
type runResult struct {
	h   *hbuf
	err error
}

// dispatch hands out the runs in order, each with the place its result
// goes, at most a window (ahead) before the one being written.
func (q *runs) dispatch(blocks []*Block) {
	defer close(q.jobs)
	defer close(q.ahead)
	for len(blocks) > 0 {
		n := runLength(blocks)
		done := make(chan runResult, 1)
		select {
		case <-q.stop:
			return
		case q.ahead <- done:
		}
		select {
		case <-q.stop:
			return
		case q.jobs <- run{blocks[:n], done}:
		}
		blocks = blocks[n:]
	}
}

// runLength is how many of blocks, from the first, one worker renders: up
// to 8, and about a frame of rows' bytes.
func runLength(blocks []*Block) int {
	size := 0
	for i, b := range blocks {
		if i == 8 || size >= rawFrame {
			return i
		}
		rows := b.Rows
		if b.Turn != nil {
			rows = b.Turn.Rows
		}
		for _, row := range rows {
			size += int(row.raw.n)
		}
	}
	return len(blocks)
}

// work renders runs until there are no more (r is the worker's own).
func (r *renderer) work(q *runs, sv *sessionView) {
	z := newFolder()
	var body hbuf
	for j := range q.jobs {
		h := q.bufs.Get().(*hbuf)
		h.Reset()
		var err error
		for _, b := range j.blocks {
			if err = r.block(h, &body, z, sv, b); err != nil {
				break
			}
			h.WriteByte('\n')
		}
		j.done <- runResult{h, err}
	}
}

// write writes the runs' results in order.
func (q *runs) write(w io.Writer) error {
	for done := range q.ahead {
		res := <-done
		if res.err != nil {
			return res.err
		}
		if _, err := w.Write(res.h.Bytes()); err != nil {
			return err
		}
		q.bufs.Put(res.h)
	}
	return nil
}

// close stops the dispatching, early when writing failed, and waits for
// the workers.
func (q *runs) close() {
	close(q.stop)
	for range q.ahead { // until the dispatcher sees stop
	}
	q.wg.Wait()
}

// block writes one block to h: whole, or folded — its summary, with its
// body (rendered into body) compressed by z. body and z are the worker's,
// reused.
func (r *renderer) block(h, body *hbuf, z *folder, sv *sessionView, b *Block) error {
	var folded []byte
	if sv.Fold {
		body.Reset()
		if b.Turn != nil {
			r.turnBody(body, b.Turn)
		} else {
			r.rows(body, b.Rows)
		}
		var err error
		if folded, err = z.fold(body.Bytes()); err != nil {
			return err
		}
	}
	if b.Turn != nil {
		r.turn(h, b.Turn, sv.Open, folded)
	} else {
		r.gap(h, b, folded)
	}
	return r.raw.err
}
