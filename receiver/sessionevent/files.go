package sessionevent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/dshtrace/dshtrace/internal/logrecord"
	"github.com/dshtrace/dshtrace/internal/zstdframe"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// The file source tails dsh session roots (docs/format.md §2).
//
// It is a small poller of its own rather than the contrib stanza
// fileconsumer: fileconsumer reads plain and gzip files only, so zstd
// generations — dsh's default encoding — would need a second reader and a
// second checkpoint scheme anyway; it identifies files by their first bytes,
// which dsh headers make alike; and it advances offsets after a failed
// delivery. One poller reads plain and zstd files the same way: rows are
// cut at newlines (plain) or decoded frame by frame (zstd), and a file's
// checkpoint — the offset of the next unread line or frame, plus the
// highest seq emitted — is written through the storage extension only after
// the next consumer accepted the rows before it.
//
// Restart: a file that grows again is first re-read from its start up to
// the checkpoint without emitting anything, which restores the decoder's
// format and the tracker's turn and step — the records' trace and span ids
// come out as if the collector had never stopped — and then read on.
//
// Truncation and rewrites (dsh truncates a crashed file back to its last
// committed record, then appends): a file shorter than its checkpoint, with
// other bytes before it, or another inode, is read again from the start,
// and rows up to the highest seq already emitted are dropped as duplicates.

const (
	// batchRows and batchBytes bound one delivery.
	batchRows  = 1000
	batchBytes = 4 << 20
	// idleEvict drops the in-memory reader of a file that did not grow for
	// so long; it is rebuilt by re-reading when the file grows again.
	idleEvict = 10 * time.Minute
	// maxBackoff bounds the wait after a refused delivery.
	maxBackoff = 30 * time.Second
	// checkpointPrefix prefixes a file's key in the storage client.
	checkpointPrefix = "file/"
	// startedKey marks a storage that has seen a first poll (start_at).
	startedKey = "files/started"
	// tailBytes is how many bytes before the offset the checkpoint keeps to
	// notice a file rewritten in place.
	tailBytes = 32
	// maxFrameOutput bounds a zstd frame's decompressed size.
	maxFrameOutput = 1 << 30
)

// generationName matches dsh's session file names (docs/format.md §2.1).
var generationName = regexp.MustCompile(`^session(?:\.v([0-9]+))?\.jsonl(\.zstd)?$`)

// checkpoint is what is stored per file.
type checkpoint struct {
	// Offset: plain, the byte after the last consumed line; zstd, the start
	// of the next frame to decode. Everything before it was delivered.
	Offset int64 `json:"offset"`
	// ID identifies the file (device and inode) to notice a replacement.
	ID string `json:"id,omitempty"`
	// Tail are the bytes just before Offset, to notice a rewrite in place.
	Tail []byte `json:"tail,omitempty"`
	// Session is the session of the file's bare rows: the header's id, else
	// the unescaped directory name.
	Session string `json:"session,omitempty"`
	// HWM is the highest seq emitted, per session.
	HWM map[string]int64 `json:"hwm,omitempty"`
	// Header: the header row was emitted.
	Header bool `json:"header,omitempty"`
}

func (c checkpoint) clone() checkpoint {
	c.HWM = maps.Clone(c.HWM)
	c.Tail = bytes.Clone(c.Tail)
	return c
}

// tailedFile is one file being tailed.
type tailedFile struct {
	path string
	zstd bool
	// cp is the committed checkpoint.
	cp   checkpoint
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
}

// liveState is the in-memory reader of a file: the decoder's and the
// tracker's state at pos, and the checkpoint the next delivery commits.
type liveState struct {
	dec     *sessionlog.RowDecoder
	tracker *logrecord.Tracker
	line    int
	pos     int64
	// replayUntil: rows ending at or before it were delivered before; they
	// only feed the decoder and the tracker.
	replayUntil int64
	skipping    bool
	carry       []byte
	carryFrom   int64
	pending     checkpoint
	// scratch receives the records of rows only followed, never sent.
	scratch plog.LogRecordSlice
}

// tailer is the file source.
type tailer struct {
	r        *sessionReceiver
	cfg      FileConfig
	patterns []string
	client   storage.Client
	// persist: client is a real storage (files::storage is set), so
	// checkpoints are written, not only kept.
	persist  bool
	files    map[string]*tailedFile
	tracked  atomic.Int64
	firstRun bool
	zd       *zstd.Decoder
	logger   *zap.Logger
}

func newTailer(r *sessionReceiver, cfg FileConfig) *tailer {
	t := &tailer{r: r, cfg: cfg, files: map[string]*tailedFile{}, logger: r.set.Logger}
	for _, p := range cfg.Include {
		t.patterns = append(t.patterns, expandPattern(p))
	}
	return t
}

func (t *tailer) start(ctx context.Context, client storage.Client, persist bool) error {
	t.client, t.persist = client, persist
	b, err := client.Get(ctx, startedKey)
	if err != nil {
		return err
	}
	t.firstRun = b == nil
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxFrameOutput),
		zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return err
	}
	t.zd = zd
	t.logger.Info("Tailing dsh session files", zap.Strings("include", t.patterns), zap.String("start_at", t.cfg.StartAt))
	return nil
}

// run polls until ctx is cancelled.
func (t *tailer) run(ctx context.Context) {
	tick := time.NewTicker(t.cfg.PollInterval)
	defer tick.Stop()
	for {
		t.poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// close releases the zstd decoder once run has returned.
func (t *tailer) close() {
	if t.zd != nil {
		t.zd.Close()
		t.zd = nil
	}
}

// poll globs the patterns, picks each session's highest generation, and
// reads what every file gained.
func (t *tailer) poll(ctx context.Context) {
	selected := selectGenerations(globFiles(t.patterns))
	var plain []*tailedFile
	for _, path := range selected {
		if ctx.Err() != nil {
			return
		}
		tf := t.files[path]
		if tf == nil {
			tf = t.discover(ctx, path)
			if tf == nil {
				continue
			}
			t.files[path] = tf
			t.tracked.Add(1)
		}
		if tf.zstd {
			t.read(ctx, tf) // one zstd decoder, one file at a time
		} else {
			plain = append(plain, tf)
		}
	}
	t.readConcurrently(ctx, plain)
	keep := map[string]bool{}
	for _, p := range selected {
		keep[p] = true
	}
	for path := range t.files {
		if keep[path] {
			continue
		}
		delete(t.files, path)
		t.tracked.Add(-1)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			// Gone for good: so is its checkpoint. (A file superseded by a
			// higher generation keeps it.)
			if err := t.client.Delete(ctx, checkpointPrefix+path); err != nil {
				t.logger.Debug("Could not delete a checkpoint", zap.String("file", path), zap.Error(err))
			}
		}
	}
	if t.firstRun && ctx.Err() == nil {
		t.firstRun = false
		if err := t.client.Set(ctx, startedKey, []byte("1")); err != nil {
			t.logger.Warn("Could not store the first-poll marker", zap.Error(err))
		}
	}
}

// readConcurrently reads the plain files, as many at once as the process
// has CPUs. Each file's state is its own (decoder, record tracker,
// checkpoint), and each file's rows still go downstream in order, one batch
// at a time; only different files overlap, so the decoding of one proceeds
// while another's batch is in the pipeline.
func (t *tailer) readConcurrently(ctx context.Context, files []*tailedFile) {
	workers := min(runtime.GOMAXPROCS(0), len(files))
	if workers <= 1 {
		for _, tf := range files {
			if ctx.Err() != nil {
				return
			}
			t.read(ctx, tf)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				t.read(ctx, files[i])
			}
		})
	}
	wg.Wait()
}

// selectGenerations keeps, per session directory, only the highest
// generation (docs/format.md §2.1: dsh opens the highest; a new generation
// holds the whole migrated history); on a tie the zstd file. Files not
// named like a generation are all kept.
func selectGenerations(paths []string) []string {
	type best struct {
		path string
		gen  int
		zstd bool
	}
	bestByDir := map[string]best{}
	var out []string
	for _, p := range paths {
		m := generationName.FindStringSubmatch(filepath.Base(p))
		if m == nil {
			out = append(out, p)
			continue
		}
		gen := 0
		if m[1] != "" {
			n, err := strconv.Atoi(m[1])
			if err != nil {
				continue
			}
			gen = n
		}
		z := m[2] != ""
		dir := filepath.Dir(p)
		b, ok := bestByDir[dir]
		if !ok || gen > b.gen || gen == b.gen && z && !b.zstd {
			bestByDir[dir] = best{p, gen, z}
		}
	}
	for _, b := range bestByDir {
		out = append(out, b.path)
	}
	slices.Sort(out)
	return out
}

// discover starts tracking a file: from its stored checkpoint, else from
// its start — or, at the very first start with start_at: end, from its end.
func (t *tailer) discover(ctx context.Context, path string) *tailedFile {
	tf := &tailedFile{path: path, zstd: strings.HasSuffix(path, ".zstd"), lastGrowth: time.Now(), garbageAt: -1}
	b, err := t.client.Get(ctx, checkpointPrefix+path)
	if err != nil {
		t.logger.Warn("Could not read a checkpoint", zap.String("file", path), zap.Error(err))
		return nil
	}
	if b != nil {
		if err := json.Unmarshal(b, &tf.cp); err != nil {
			t.logger.Warn("Unreadable checkpoint; reading the file from its start", zap.String("file", path), zap.Error(err))
			tf.cp = checkpoint{}
		}
		return tf
	}
	if t.firstRun && t.cfg.StartAt == startAtEnd {
		off, err := endOffset(path, tf.zstd)
		if err != nil {
			t.logger.Warn("Could not find the end of a file", zap.String("file", path), zap.Error(err))
			return nil
		}
		tf.cp.Offset = off
	}
	return tf
}

// endOffset is the end of the file's complete content: after its last
// newline (plain) or its last complete frame (zstd).
func endOffset(path string, isZstd bool) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if isZstd {
		var off int64
		for off < size {
			n, complete, err := zstdframe.Size(f, off, size)
			if err != nil || !complete {
				break
			}
			off += n
		}
		return off, nil
	}
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// read reads what a file gained since the last poll and delivers it. An
// unchanged file costs one stat.
func (t *tailer) read(ctx context.Context, tf *tailedFile) {
	now := time.Now()
	if now.Before(tf.retryAt) {
		return
	}
	fi, err := os.Stat(tf.path)
	if err != nil {
		return // gone or unreadable: dropped or retried by the next poll
	}
	size, id := fi.Size(), fileID(fi)
	if tf.cp.ID != "" && id != "" && id != tf.cp.ID || size < tf.cp.Offset || tf.live != nil && size < tf.live.pos {
		t.restart(tf, size)
	}
	tf.cp.ID = id
	if tf.dead {
		return
	}
	if size == tf.seenSize || tf.live == nil && size == tf.cp.Offset {
		if tf.live != nil && now.Sub(tf.lastGrowth) > idleEvict {
			tf.live = nil // rebuilt by re-reading when the file grows again
		}
		return
	}
	f, err := os.Open(tf.path)
	if err != nil {
		t.logger.Debug("Cannot open a session file", zap.String("file", tf.path), zap.Error(err))
		return
	}
	defer f.Close()
	if n := int64(len(tf.cp.Tail)); n > 0 && tf.cp.Offset >= n {
		// Other bytes before the checkpoint: rewritten in place.
		got := make([]byte, n)
		if _, err := f.ReadAt(got, tf.cp.Offset-n); err != nil || !bytes.Equal(got, tf.cp.Tail) {
			t.restart(tf, size)
		}
	}
	tf.seenSize, tf.lastGrowth = size, now
	if tf.live == nil {
		tf.live = &liveState{
			dec:         sessionlog.NewRowDecoder(t.r.cfg.MaxLineBytes, 0),
			tracker:     logrecord.NewTracker(16),
			replayUntil: tf.cp.Offset,
			pending:     tf.cp.clone(),
			scratch:     plog.NewLogRecordSlice(),
		}
	}
	var readErr error
	if tf.zstd {
		readErr = t.readZstd(ctx, tf, f, size)
	} else {
		readErr = t.readPlain(ctx, tf, f, size)
	}
	if readErr != nil {
		// Delivery refused (or shutting down): nothing was committed. The
		// reader is rebuilt from the checkpoint on the next try.
		tf.live, tf.seenSize = nil, -1
		if ctx.Err() == nil {
			tf.backoff = min(max(2*tf.backoff, t.cfg.PollInterval), maxBackoff)
			tf.retryAt = time.Now().Add(tf.backoff)
			t.logger.Warn("Delivery refused; will retry", zap.String("file", tf.path), zap.Duration("backoff", tf.backoff), zap.Error(readErr))
		}
		return
	}
	tf.backoff = 0
}

// restart makes a file that is no longer the one its checkpoint describes
// — shorter than what was read, another inode, other bytes before the
// offset — be read again from its start; rows up to the highest seq
// already emitted are dropped as duplicates.
func (t *tailer) restart(tf *tailedFile, size int64) {
	t.logger.Info("Session file was truncated or rewritten; reading it again from the start (rows already delivered are dropped by seq)",
		zap.String("file", tf.path), zap.Int64("size", size), zap.Int64("offset", tf.cp.Offset))
	tf.cp.Offset, tf.cp.Tail = 0, nil
	tf.live, tf.dead, tf.seenSize = nil, false, -1
}

// fileBatch is the records of one delivery.
type fileBatch struct {
	ld    plog.Logs
	lrs   map[string]plog.LogRecordSlice
	n     int
	bytes int
	dups  int
}

func newFileBatch() *fileBatch {
	return &fileBatch{ld: plog.NewLogs(), lrs: map[string]plog.LogRecordSlice{}}
}

func (b *fileBatch) full() bool { return b.n >= batchRows || b.bytes >= batchBytes }

// errRefused: the next consumer refused a batch with a retryable error.
var errRefused = errors.New("delivery refused")

// readPlain reads complete lines from live.pos to size.
func (t *tailer) readPlain(ctx context.Context, tf *tailedFile, f *os.File, size int64) error {
	live := tf.live
	br := bufio.NewReaderSize(io.NewSectionReader(f, live.pos, size-live.pos), 256<<10)
	batch := newFileBatch()
	committed := live.pos // the last line boundary
	var acc []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(frag) > 0 && (err == nil || errors.Is(err, bufio.ErrBufferFull)) {
			live.pos += int64(len(frag))
			if !live.skipping {
				acc = append(acc, frag...)
				if len(acc) > t.r.cfg.MaxLineBytes+1 {
					live.skipping, acc = true, nil
					live.line++
					if live.pos > live.replayUntil {
						t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
					}
				}
			}
			if err == nil { // a newline
				if live.skipping {
					live.skipping = false
				} else {
					line := bytes.Clone(acc[:len(acc)-1])
					acc = acc[:0]
					live.line++
					if stop := t.handleRow(ctx, tf, line, live.pos <= live.replayUntil, batch); stop {
						return t.flush(ctx, tf, f, batch, committed)
					}
				}
				committed = live.pos
				if batch.full() {
					if err := t.flush(ctx, tf, f, batch, committed); err != nil {
						return err
					}
					batch = newFileBatch()
				}
			}
			continue
		}
		// EOF (or a read error): the unterminated rest waits for its newline.
		if !live.skipping {
			live.pos -= int64(len(acc))
		}
		break
	}
	return t.flush(ctx, tf, f, batch, committed)
}

// readZstd decodes complete frames from live.pos to size; an incomplete
// last frame waits.
func (t *tailer) readZstd(ctx context.Context, tf *tailedFile, f *os.File, size int64) error {
	live := tf.live
	batch := newFileBatch()
	for live.pos < size && ctx.Err() == nil {
		n, complete, err := zstdframe.Size(f, live.pos, size)
		if err != nil {
			next, found := nextFrame(f, live.pos+1, size)
			if tf.garbageAt != live.pos {
				tf.garbageAt = live.pos
				if live.pos >= live.replayUntil {
					t.reject(ctx, tf, live.line+1, -1, "CORRUPT_ZSTD", "undecodable bytes at offset "+strconv.FormatInt(live.pos, 10)+": "+err.Error())
				}
			}
			if !found {
				break // wait: more bytes may bring the next frame
			}
			live.pos = next
			continue
		}
		if !complete {
			break // the frame being written (or a torn tail): wait for the rest
		}
		frame := make([]byte, n)
		if _, err := f.ReadAt(frame, live.pos); err != nil {
			break // retried next poll
		}
		start := live.pos
		live.pos += n
		replay := live.pos <= live.replayUntil
		data, err := t.zd.DecodeAll(frame, nil)
		if err != nil {
			if !replay {
				t.reject(ctx, tf, live.line+1, -1, "CORRUPT_ZSTD", "undecodable zstd frame at offset "+strconv.FormatInt(start, 10)+": "+err.Error())
			}
			continue
		}
		if len(live.carry) == 0 && !live.skipping {
			live.carryFrom = start
		}
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if !live.skipping {
					live.carry = append(live.carry, data...)
					if len(live.carry) > t.r.cfg.MaxLineBytes {
						live.skipping, live.carry = true, nil
						live.line++
						if !replay {
							t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
						}
					}
				}
				break
			}
			seg := data[:i]
			data = data[i+1:]
			if live.skipping {
				live.skipping = false
				continue
			}
			line := append(live.carry, seg...)
			live.carry = nil
			if len(line) > t.r.cfg.MaxLineBytes {
				live.line++
				if !replay {
					t.reject(ctx, tf, live.line, -1, sessionlog.CodeRowTooLong, "row exceeds max_line_bytes; skipped")
				}
				continue
			}
			live.line++
			if stop := t.handleRow(ctx, tf, bytes.Clone(line), replay, batch); stop {
				return t.flush(ctx, tf, f, batch, boundary(live))
			}
		}
		if len(live.carry) == 0 && !live.skipping && batch.full() {
			if err := t.flush(ctx, tf, f, batch, live.pos); err != nil {
				return err
			}
			batch = newFileBatch()
		}
	}
	return t.flush(ctx, tf, f, batch, boundary(live))
}

// boundary is the offset a zstd checkpoint may take: after the last frame,
// unless a row continues past it (then the start of the frame it began in:
// re-read rows are dropped by seq).
func boundary(live *liveState) int64 {
	if len(live.carry) > 0 || live.skipping {
		return live.carryFrom
	}
	return live.pos
}

// nextFrame finds the next zstd frame magic at or after off.
func nextFrame(f *os.File, off, size int64) (int64, bool) {
	buf := make([]byte, 64<<10)
	for off < size {
		n, _ := f.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n == 0 {
			break
		}
		if i := bytes.Index(buf[:n], zstdMagic); i >= 0 {
			return off + int64(i), true
		}
		if n < len(zstdMagic) {
			break
		}
		off += int64(n - len(zstdMagic) + 1)
	}
	return 0, false
}

// handleRow decodes one row and adds its record to the batch, unless it
// was delivered before (replay, or a seq already emitted) or is corrupt.
// stop is true when the file cannot be read on (unsupported version).
func (t *tailer) handleRow(ctx context.Context, tf *tailedFile, b []byte, replay bool, batch *fileBatch) (stop bool) {
	live := tf.live
	if len(bytes.TrimSpace(b)) == 0 {
		return false
	}
	row, err := live.dec.Decode(b, live.line)
	if err != nil {
		if !replay {
			var uv *sessionlog.UnsupportedVersionError
			reason := "UNSUPPORTED_VERSION"
			if !errors.As(err, &uv) {
				reason = "INVALID"
			}
			t.reject(ctx, tf, live.line, -1, reason, err.Error()+"; the file is not read on")
		}
		tf.dead = true
		return true
	}
	p := &live.pending
	f := live.dec.Format()
	switch row.Kind {
	case sessionlog.RowOther:
		return false
	case sessionlog.RowInvalid:
		if !replay {
			v := sessionlog.Violation{Line: live.line, Seq: -1, Code: "INVALID", Message: "undecodable row"}
			if len(row.Problems) > 0 {
				v = row.Problems[0]
			}
			t.reject(ctx, tf, v.Line, v.Seq, v.Code, v.Message)
		}
		return false
	case sessionlog.RowHeader:
		for _, v := range row.Problems {
			if v.Code == sessionlog.CodeHeaderMisplaced {
				if !replay {
					t.reject(ctx, tf, v.Line, v.Seq, v.Code, v.Message)
				}
				return false
			}
		}
		if p.Session == "" {
			p.Session = row.Header.ID
			if p.Session == "" {
				p.Session = dirSession(tf.path)
			}
		}
		if replay || p.Header {
			live.follow(p.Session, row, f)
			if !replay {
				batch.dups++
			}
			return false
		}
		p.Header = true
		t.emit(tf, row, p.Session, f, batch)
		return false
	}
	session := row.SessionID
	if row.Wrapper == sessionlog.WrapNone || session == "" {
		if p.Session == "" {
			p.Session = dirSession(tf.path)
		}
		session = p.Session
	}
	first, last := firstSeq(row), lastSeq(row)
	hwm, seen := p.HWM[session]
	if replay || seen && first <= hwm {
		live.follow(session, row, f)
		if !replay {
			batch.dups++
		}
		if !seen || last > hwm {
			t.setHWM(p, session, last)
		}
		return false
	}
	t.setHWM(p, session, last)
	t.emit(tf, row, session, f, batch)
	return false
}

// follow moves the tracker past a row that is not emitted again.
func (l *liveState) follow(session string, row *sessionlog.Row, f sessionlog.Format) {
	if l.scratch.Len() >= 64 {
		l.scratch = plog.NewLogRecordSlice()
	}
	l.tracker.Append(l.scratch, session, row, f, time.Time{})
}

func (t *tailer) setHWM(p *checkpoint, session string, seq int64) {
	if p.HWM == nil {
		p.HWM = map[string]int64{}
	}
	if cur, ok := p.HWM[session]; !ok || seq > cur {
		p.HWM[session] = seq
	}
}

func (t *tailer) emit(tf *tailedFile, row *sessionlog.Row, session string, f sessionlog.Format, batch *fileBatch) {
	lrs, ok := batch.lrs[session]
	if !ok {
		lrs = logrecord.NewResourceLogs(batch.ld, session, nil)
		batch.lrs[session] = lrs
	}
	tf.live.tracker.Append(lrs, session, row, f, t.r.now())
	batch.n++
	batch.bytes += len(row.Bytes)
	if len(row.Problems) > 0 {
		v := row.Problems[0]
		t.logger.Debug("Session row with a violation delivered as is", zap.String("file", tf.path),
			zap.Int("line", v.Line), zap.Int64("seq", v.Seq), zap.String("code", v.Code), zap.String("message", v.Message))
	}
}

// reject logs and counts a row the file source skips.
func (t *tailer) reject(ctx context.Context, tf *tailedFile, line int, seq int64, code, msg string) {
	t.logger.Warn("Skipping a corrupt session row", zap.String("file", tf.path), zap.Int("line", line),
		zap.Int64("seq", seq), zap.String("code", code), zap.String("message", msg))
	t.r.tel.RowsRejected.Add(ctx, 1, metric.WithAttributes(
		attribute.String("transport", transportFile), attribute.String("reason", strings.ToLower(code))))
}

// flush delivers the batch and, once it was accepted, commits the
// checkpoint at offset. A retryable refusal commits nothing and returns
// errRefused; a permanent one is logged and counted, and the rows are
// passed over (retrying could never succeed).
func (t *tailer) flush(ctx context.Context, tf *tailedFile, f *os.File, batch *fileBatch, offset int64) error {
	live := tf.live
	if batch.n > 0 {
		obs := t.r.obs[transportFile]
		opCtx := obs.StartLogsOp(ctx)
		err := t.r.next.ConsumeLogs(opCtx, batch.ld)
		obs.EndLogsOp(opCtx, "jsonl", batch.n, err)
		switch {
		case err == nil:
			t.r.tel.RowsAccepted.Add(ctx, int64(batch.n), t.r.attrFile)
		case consumererror.IsPermanent(err):
			t.logger.Error("The pipeline refused session rows permanently; they are skipped", zap.String("file", tf.path),
				zap.Int("rows", batch.n), zap.Error(err))
			t.r.tel.RowsRejected.Add(ctx, int64(batch.n), metric.WithAttributes(
				attribute.String("transport", transportFile), attribute.String("reason", "downstream_permanent")))
		default:
			return errors.Join(errRefused, err)
		}
	}
	if batch.dups > 0 {
		t.r.tel.RowsDuplicate.Add(ctx, int64(batch.dups), t.r.attrFile)
		batch.dups = 0
	}
	if offset <= tf.cp.Offset && batch.n == 0 && sameCheckpoint(tf.cp, live.pending) {
		return nil
	}
	cp := live.pending.clone()
	cp.Offset = max(offset, tf.cp.Offset)
	cp.ID = tf.cp.ID
	cp.Tail = nil
	if k := min(int64(tailBytes), cp.Offset); k > 0 {
		tail := make([]byte, k)
		if _, err := f.ReadAt(tail, cp.Offset-k); err == nil {
			cp.Tail = tail
		}
	}
	t.r.tel.BytesRead.Add(ctx, cp.Offset-tf.cp.Offset, t.r.attrFile)
	tf.cp = cp
	if !t.persist {
		return nil
	}
	b, err := json.Marshal(cp)
	if err == nil {
		err = t.client.Set(ctx, checkpointPrefix+tf.path, b)
	}
	if err != nil {
		t.logger.Warn("Could not store a checkpoint; a restart may deliver these rows again", zap.String("file", tf.path), zap.Error(err))
	}
	return nil
}

func sameCheckpoint(a, b checkpoint) bool {
	return a.Session == b.Session && a.Header == b.Header && maps.Equal(a.HWM, b.HWM)
}

// dirSession is the session id a file's directory name stands for
// (docs/format.md §2.2), or the name itself when it is no valid escape.
func dirSession(path string) string {
	name := filepath.Base(filepath.Dir(path))
	if id, ok := unescapeSessionID(name); ok {
		return id
	}
	return name
}
