package main

import (
	"container/list"
	"errors"
	"fmt"
	"sync"

	"github.com/dshtrace/dshtrace/cmd/dshtrace/internal/replay"
)

// pageStore builds session pages and keeps the latest under one memory
// budget. A page is built once however many requests ask for it at once
// (they wait for the one build); a build reserves, as it reads, the memory
// its page is estimated to take (replay.Estimate), evicting the pages kept
// that no request is using; a page that cannot fit is refused rather than
// built. A page stays reserved while a request renders it, even once
// evicted.
type pageStore struct {
	mu     sync.Mutex
	budget int64 // bytes that pages being built, kept and in use may take in all
	used   int64
	byFile map[string]*storedPage // the latest page of each file (root and path)
	idle   *list.List             // pages kept and not in use, least recently used first
}

// storedPage is one page, built or being built.
type storedPage struct {
	file, version string
	keep          bool          // kept once built (a session's page), or dropped (a list summary's)
	done          chan struct{} // closed when the build ends
	page          *replay.Page
	err           error
	size          int64         // bytes reserved
	users         int           // requests holding the page
	gone          bool          // no longer in byFile: freed when its last user leaves
	idleAt        *list.Element // in idle, when kept and unused
}

// errPageTooLarge and errPagesBusy are a build refused for memory: the
// page can never fit the budget, or cannot while other pages are built.
var (
	errPageTooLarge = errors.New("page too large")
	errPagesBusy    = errors.New("pages busy")
)

// budgetError says why a build was refused and what to do.
type budgetError struct {
	kind   error // errPageTooLarge or errPagesBusy
	needed int64
	budget int64
}

func (e *budgetError) Error() string {
	if e.kind == errPageTooLarge {
		return fmt.Sprintf("this session's page needs more than the %d MiB serve may use for pages (--max-page-memory); "+
			"restart serve with a larger --max-page-memory, or write the page with dshtrace replay -o FILE.html", e.budget>>20)
	}
	return fmt.Sprintf("the %d MiB serve may use for pages (--max-page-memory) are taken by pages being built; try again in a moment", e.budget>>20)
}

func (e *budgetError) Unwrap() error { return e.kind }

func newPageStore(budget int64) *pageStore {
	return &pageStore{budget: budget, byFile: map[string]*storedPage{}, idle: list.New()}
}

// get returns the page of file at version, built by build unless it is
// kept or being built; release gives it back when the request is done
// with it. build reports its estimated memory through grow, which fails
// when the budget cannot hold it.
func (ps *pageStore) get(file, version string, keep bool, build func(grow func(int64) error) (*replay.Page, error)) (*replay.Page, func(), error) {
	ps.mu.Lock()
	sp := ps.byFile[file]
	if sp != nil && sp.version == version {
		ps.use(sp)
		ps.mu.Unlock()
		<-sp.done
		if sp.err != nil {
			ps.release(sp)
			return nil, nil, sp.err
		}
		return sp.page, func() { ps.release(sp) }, nil
	}
	if sp != nil {
		ps.forget(sp) // the file changed: its old page goes
	}
	sp = &storedPage{file: file, version: version, keep: keep, done: make(chan struct{}), users: 1}
	ps.byFile[file] = sp
	ps.mu.Unlock()

	sp.page, sp.err = build(func(size int64) error { return ps.reserve(sp, size) })
	ps.mu.Lock()
	if sp.err != nil || !keep {
		ps.forget(sp) // a failed build is tried again by the next request
	}
	ps.mu.Unlock()
	close(sp.done)
	if sp.err != nil {
		ps.release(sp)
		return nil, nil, sp.err
	}
	return sp.page, func() { ps.release(sp) }, nil
}

// reserve grows a build's reservation to size, evicting idle pages as
// needed.
func (ps *pageStore) reserve(sp *storedPage, size int64) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	more := size - sp.size
	if more <= 0 {
		return nil
	}
	if size > ps.budget {
		return &budgetError{kind: errPageTooLarge, needed: size, budget: ps.budget}
	}
	for ps.used+more > ps.budget && ps.idle.Len() > 0 {
		ps.forget(ps.idle.Front().Value.(*storedPage))
	}
	if ps.used+more > ps.budget {
		return &budgetError{kind: errPagesBusy, needed: size, budget: ps.budget}
	}
	ps.used += more
	sp.size = size
	return nil
}

// use counts a request holding sp.
func (ps *pageStore) use(sp *storedPage) {
	sp.users++
	if sp.idleAt != nil {
		ps.idle.Remove(sp.idleAt)
		sp.idleAt = nil
	}
}

// release is a request done with sp: a page kept becomes idle (the most
// recently used), one gone frees its memory.
func (ps *pageStore) release(sp *storedPage) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	sp.users--
	switch {
	case sp.users > 0:
	case sp.gone:
		ps.used -= sp.size
		sp.size = 0
	default:
		sp.idleAt = ps.idle.PushBack(sp)
	}
}

// forget takes sp out of the store; its memory is freed now when no
// request holds it, else when the last leaves.
func (ps *pageStore) forget(sp *storedPage) {
	if sp.gone {
		return
	}
	sp.gone = true
	if ps.byFile[sp.file] == sp {
		delete(ps.byFile, sp.file)
	}
	if sp.idleAt != nil {
		ps.idle.Remove(sp.idleAt)
		sp.idleAt = nil
	}
	if sp.users == 0 {
		ps.used -= sp.size
		sp.size = 0
	}
}

// usage is the memory reserved and the pages kept, for tests.
func (ps *pageStore) usage() (used int64, pages int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.used, len(ps.byFile)
}

// fileCache keeps a small value per file (a session's list line, its
// header) while the file is unchanged, one entry per file, at most max
// entries (the least recently used go first).
type fileCache[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element
	order   *list.List // of *fileEntry[V], least recently used first
}

// fileEntry is one file's cached value and the version it was read at.
type fileEntry[V any] struct {
	file    string
	version fileVersion
	value   V
}

// fileVersion is what a cached value depends on of its file.
type fileVersion struct {
	size, modTime int64
}

func newFileCache[V any](max int) *fileCache[V] {
	return &fileCache[V]{max: max, entries: map[string]*list.Element{}, order: list.New()}
}

// get returns file's value when valid says the version it was read at
// still holds.
func (c *fileCache[V]) get(file string, valid func(fileVersion) bool) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	el := c.entries[file]
	if el == nil {
		return zero, false
	}
	fe := el.Value.(*fileEntry[V])
	if !valid(fe.version) {
		return zero, false
	}
	c.order.MoveToBack(el)
	return fe.value, true
}

// put sets file's value, read at version, in place of any before.
func (c *fileCache[V]) put(file string, version fileVersion, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.entries[file]; el != nil {
		el.Value = &fileEntry[V]{file, version, v}
		c.order.MoveToBack(el)
		return
	}
	c.entries[file] = c.order.PushBack(&fileEntry[V]{file, version, v})
	for c.order.Len() > c.max {
		old := c.order.Remove(c.order.Front()).(*fileEntry[V])
		delete(c.entries, old.file)
	}
}

// len is the number of files cached.
func (c *fileCache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
