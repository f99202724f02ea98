package filesource

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/episode"
	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/filesource/checkpoint"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/metadata"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Source is the file transport: a poller tailing the session files the
// include patterns match, each file read, delivered to next and
// checkpointed on its own.
type Source struct {
	cfg     Config
	maxLine int
	// bounds are the placement's: each file's tracker follows the sessions
	// its rows name within them.
	bounds      turnmodel.Bounds
	set         receiver.Settings
	next        consumer.Logs
	obs         *receiverhelper.ObsReport
	tel         *metadata.TransportTelemetry
	now         func() time.Time
	logger      *zap.Logger
	patterns    []string
	checkpoints *checkpoint.Store
	files       map[string]*tailedFile
	tracked     atomic.Int64
	firstRun    bool
	zd          *zstd.Decoder
	// refusing is the pipeline refusing deliveries (retried), storing the
	// checkpoint writes failing: each logged once as it begins and ends.
	refusing, storing *episode.Episode

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// tailedFile is one file being tailed.
type tailedFile struct {
	path string
	zstd bool
	// cp is the committed checkpoint.
	cp   checkpoint.Checkpoint
	live *liveState
	// seenSize is the size at the last read.
	seenSize   int64
	lastGrowth time.Time
	retryAt    time.Time
	backoff    time.Duration
	// dead: the file needs a newer reader (unsupported version); it is
	// read again only once rewritten.
	dead bool
	// garbageAt is the offset of the undecodable bytes last reported.
	garbageAt int64
	// unsaved: cp was delivered but could not be stored; the file is not
	// read on until it is.
	unsaved bool
}

// liveState is the in-memory reader of a file: the decoder's and the
// tracker's state at pos, and the checkpoint the next delivery commits.
type liveState struct {
	dec *sessionlog.RowDecoder
	// arena holds the rows being handled while a read of the file is under
	// way (borrowed from fileArenas for it): a row is done with once it is
	// handled (handleRow), so the arena is reset every arenaRows rows (one
	// reset per row cost more than the clearing it does) and when the read
	// ends. arenaRows counts the rows in it.
	arena     *sessionlog.Arena
	arenaRows int
	tracker   *logrecord.Tracker
	line      int
	pos       int64
	// replayUntil: rows ending at or before it were delivered before; they
	// only feed the decoder and the tracker.
	replayUntil int64
	skipping    bool
	carry       []byte
	carryFrom   int64
	pending     checkpoint.Checkpoint
	// scratch receives the records of rows only followed, never sent.
	scratch plog.LogRecordSlice
	// owned holds the wrapped rows' session ids as strings of their own,
	// lastOwned the one met last (own).
	owned     map[string]string
	lastOwned string
}
