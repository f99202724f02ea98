// Package journal keeps what the turn_state connector needs to carry every
// session on after a restart, crash included, and, on a Kafka changelog,
// across the instances of a consumer group.
//
// It keeps each session's Mark (where its seqs stand, the last turn it
// closed, the model in use) and the records from the Mark's Retain on —
// the open turn's so far, and any held in the reorder window. On start the
// connector resumes each session from its Mark and re-reads those records,
// so a turn open at the stop is rebuilt and closes once, with all its
// spans, when its turn/end arrives; records delivered again after the
// restart are duplicates.
//
// Layout (a key-value store without listing):
//
//	idx/NN           JSON array of the session ids in bucket NN (of 64)
//	s/"ID"           JSON entry: the Mark and the chunks kept
//	s/"ID"/h         the session's header record (plog protobuf)
//	s/"ID"/c/N       chunk N: records of one batch from Retain on (plog protobuf)
//
// Ids are quoted (strconv.Quote) so no id's keys can collide with another's.
// A changelog lists its keys itself, so it keeps no idx buckets.
//
// When: every pass of the connector — a batch, a sweep, the shutdown, the
// restore — ends with one write that brings the journal up to date with
// the engine for the sessions the pass touched (Update, Start, Finish):
// their marks, the new chunk of each (the batch's records from Retain on),
// the chunks Retain has passed deleted, the forgotten sessions deleted. It
// is written after the pass emitted its turns, so the journal lets go of a
// turn only once it is out, and before the batch is acknowledged, so the
// receiver checkpoints only what is journaled.
//
// Two implementations share that protocol (ledger): Storage, on a storage
// extension, and Changelog, on a compacted Kafka topic, which also owns
// everything an instance knows of the session topic's partitions (the
// kafka receiver's metadata, the group coordinator's answer) and moves
// sessions between instances as their partitions move.
package journal

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/turnengine"
)

// Journal is the connector's durable session state, as the connector's
// core uses it. The core calls it inside its passes: the Before steps
// under its pass lock only, the steps they return and Update under its
// state lock too, Start under the pass lock, Finish under no lock.
type Journal interface {
	// Load reads back, at start, the sessions this journal resumes. The
	// values it cannot read are reported (logged and counted) and their
	// sessions start afresh; only a failure to read at all is an error.
	Load(ctx context.Context) ([]Restored, error)
	// Serial reports whether a batch must be decoded inside its pass,
	// after BeforeBatch (the changelog's read barrier), rather than beside
	// the pass before it.
	Serial() bool
	// BeforeBatch prepares the pass of a batch; it may wait for the
	// network. It returns what to do under the state lock before the
	// batch is applied (nil: nothing). An error refuses the batch,
	// unapplied, for its sender to retry.
	BeforeBatch(ctx context.Context, ld plog.Logs, peek Peek) (Step, error)
	// BeforeSweep prepares a sweep's pass likewise. An error (ErrUnread,
	// ErrOwners) leaves the sweep for the next tick.
	BeforeSweep(ctx context.Context, peek Peek) (SweepStep, error)
	// Update brings the journal's index up to date with the engine for
	// the sessions ids (and the forgotten) and returns the writes that
	// bring the store there; batch holds the records each session had in
	// the pass's batch.
	Update(mark MarkOf, ids []string, batch map[string]*Kept, forgotten []string) []*storage.Operation
	// Start starts the writes of one pass, in pass order.
	Start(ctx context.Context, ops []*storage.Operation) Write
	// Finish waits for a pass's writes. A failed write leaves its
	// sessions behind: the next Update rewrites them whole.
	Finish(ctx context.Context, w Write) error
	// KeepBack drops the writes of a pass whose turns were not delivered:
	// the sessions it touched are behind.
	KeepBack()
	// Wait waits for every write started and not yet finished.
	Wait()
	// Redelivered counts, among a batch's inputs, the events of sessions
	// resumed at start that the journal had applied already.
	Redelivered(inputs []turnengine.Input) int64
	// Close waits for the writes in flight and closes the store.
	Close(ctx context.Context) error
}

// Engine is what a journal asks of the sessions the connector carries on.
// It is called inside a pass, under the core's state lock.
type Engine interface {
	// Holds reports whether the engine holds the session.
	Holds(id string) bool
	// Resume starts carrying on a session read back from the journal:
	// its mark, then its records from the mark's Retain on, re-applied
	// without being counted again. It returns the events re-applied.
	Resume(r Restored, now time.Time) int64
	// Release stops tracking a session, writing and emitting nothing; it
	// reports whether the engine held it, and with a turn open.
	Release(id string) (open, held bool)
	// Forget drops what the record reader knows of a session.
	Forget(id string)
	// Due lists the sessions with a turn due to close as dangling by t.
	Due(t time.Time) []string
	// OpenTurns is the number of turns open.
	OpenTurns() int
}

// Peek runs fn with the engine under the core's state lock, from a
// Before step (which runs without it).
type Peek func(fn func(Engine))

// Step is what a batch's pass does, under the state lock, before the batch
// is applied.
type Step func(ctx context.Context, e Engine, now time.Time)

// SweepStep is what a sweep's pass does, under the state lock, before the
// engine sweeps; hold, when not nil, names the sessions whose turns the
// sweep must not close as dangling.
type SweepStep func(ctx context.Context, e Engine, now time.Time) (hold func(session string) bool)

// MarkOf is the engine's mark of a session, false when it holds none.
type MarkOf func(id string) (turnengine.Mark, bool)

// Restored is one session read back from the journal.
type Restored struct {
	// ID is the session id.
	ID string
	// Mark is where the session stood at its last write.
	Mark turnengine.Mark
	// Logs are the header record first, then the chunks in order.
	Logs plog.Logs
}

// Write is one pass's journal write: started in pass order under the pass
// lock, waited for after it, so that the writes of passes that follow one
// another closely share a round trip to the changelog's brokers.
type Write struct {
	touched []string     // the sessions it brings up to date
	wait    func() error // nil: nothing to wait for
	async   bool         // started and not yet done: counted in writing
}

// Errors a journal's steps return.
var (
	// ErrWrite: a pass's write failed; the batch is refused.
	ErrWrite = errors.New("turn_state: write the journal")
	// ErrUnread: the changelog could not be read up to its end.
	ErrUnread = errors.New("turn_state: read the changelog")
	// ErrOwners: the consumer group's coordinator did not answer.
	ErrOwners = errors.New("turn_state: ask the consumer group's coordinator")
)
