package httpsource

import (
	"sync"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// endpoint says which of the two POST endpoints a body came to.
type endpoint uint8

const (
	// endpointSession: /v1/sessions/{session_id}/events — rows of one session.
	endpointSession endpoint = iota
	// endpointLines: /v1/session-events — self-describing wrapped lines.
	endpointLines
)

// parseOptions configure parseBody.
type parseOptions struct {
	endpoint endpoint
	// session is the path's session id (endpointSession).
	session string
	// client is the client the request's authenticator named ("" none):
	// the request's sessions are its (logrecord.ClientFromContext).
	client string
	// maxLine is the longest row accepted.
	maxLine int
	// maxBody bounds the decompressed size of a body compressed without a
	// Content-Encoding (a raw .jsonl.zstd or .gz upload).
	maxBody int64
	// encoding is the request's Content-Encoding, when confighttp left the
	// body to the receiver to decode (zstd).
	encoding string
	// version is the header version remembered for a session from earlier
	// requests (dedup.UnknownVersion: none); nil means none.
	version func(session string) int
	// ticket, when set, takes the decompressed bytes read from the
	// admission control (admission.go).
	ticket *ticket
	// full decodes every row in full, never shallowly (tests compare).
	full bool
}

// parsedSession is the part of a request that belongs to one session.
type parsedSession struct {
	id  string // the session's key (clientid.Key)
	dec *sessionlog.RowDecoder
	// header is the session's header row, if the request carries one.
	header *sessionlog.Row
	// rows are the event and packed rows, sorted by seq once parsed.
	rows []*sessionlog.Row
	// dups counts rows the request repeats byte for byte.
	dups int
	// start is the format the session's decoder began the request with.
	start sessionlog.Format
	// shallow: after the session's first row, which begins past seq 0, the
	// rows are decoded shallowly (sessionlog SetShallow) — what a request
	// judged row by row reads, as the connector decodes every row whole
	// again. A request found to hold seq 0 after all is decoded again in
	// full (redecode) before it is judged against every invariant: its
	// rows, until finish sorts them, are in the order they came, the
	// header's place among them headerAt.
	shallow, begun bool
	headerAt       int
	// redecoded: the rows were decoded shallowly, then again in full.
	redecoded bool
}

// parsedBody is a decoded, judged request body.
type parsedBody struct {
	sessions []*parsedSession // in order of first appearance
	byID     map[string]*parsedSession
	// rows counts the rows carrying session content (header, event,
	// packed); ignored the well-formed lines carrying none (status
	// notifications, result lines).
	rows, ignored int
	// bytes is the decompressed body size read.
	bytes int64
	// cited counts the seqs the rows' sourceEventSeqs expand to.
	cited int
	// arena holds the request's decoded rows (from arenas) until release.
	arena *sessionlog.Arena
}

// arenas recycle the decoded rows of requests: a request's rows are done
// with once it is answered (release).
var arenas = sync.Pool{New: func() any { return new(sessionlog.Arena) }}

// pooledArenaBytes is the largest body whose arena goes back to arenas: an
// arena keeps the blocks it grew to, several times the body's size in
// small rows, and a pooled one lives on until two garbage collections
// have passed. Live posts, the requests worth recycling for, are far
// smaller; a large upload's arena is left to the collector.
const pooledArenaBytes = 256 << 10

// release frees the request's decoded rows; pb's rows are not to be read
// after it.
func (p *parsedBody) release() {
	if p.arena != nil {
		if p.bytes <= pooledArenaBytes {
			p.arena.Reset()
			arenas.Put(p.arena)
		}
		p.arena = nil
	}
}

// maxCitedSeqs bounds the seqs the sourceEventSeqs of one request may
// expand to (a range of a few bytes can name a million seqs, and the
// request is held whole): 4M seqs, 32 MiB. Real sessions stay far below.
const maxCitedSeqs = 1 << 22

func (p *parsedBody) ids() []string {
	out := make([]string, len(p.sessions))
	for i, s := range p.sessions {
		out[i] = s.id
	}
	return out
}
