package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// projectDir is the project key of the sessions' cwd /home/bench/proj.
const projectDir = "--home-bench-proj--"

// WrappedFile is the file name of the -wrapped layout.
const WrappedFile = "sessions-wrapped.jsonl"

// Generate writes the session root dir and its manifest.
func Generate(dir string, p Params, force bool) (*Manifest, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil && !force {
		return nil, fmt.Errorf("%s already holds a corpus (use -force)", dir)
	}
	if force {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	m := &Manifest{Params: p}
	var wrapped *output
	if p.Wrapped {
		var err error
		if wrapped, err = create(filepath.Join(dir, WrappedFile)); err != nil {
			return nil, err
		}
		m.Files = 1
	}
	for i := range p.Sessions {
		s := newSession(p, i)
		o := wrapped
		if o == nil {
			sd := filepath.Join(dir, projectDir, s.id)
			if err := os.MkdirAll(sd, 0o755); err != nil {
				return nil, err
			}
			name := "session.jsonl"
			if s.version == 4 {
				name = "session.v4.jsonl"
			}
			var err error
			if o, err = create(filepath.Join(sd, name)); err != nil {
				return nil, err
			}
			m.Files++
		}
		s.out = o
		s.write()
		m.Rows += s.rows
		m.Events += s.seq
		m.Turns += s.closed
		m.OpenTurns += s.open
		m.Spans += s.spans
		if o != wrapped {
			if err := o.close(); err != nil {
				return nil, err
			}
			m.Bytes += o.n
		}
	}
	if wrapped != nil {
		if err := wrapped.close(); err != nil {
			return nil, err
		}
		m.Bytes = wrapped.n
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return m, os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644)
}

func (p Params) check() error {
	switch {
	case p.Sessions < 1 || p.Turns < 1 || p.Steps < 1:
		return errors.New("sessions, turns and steps must be at least 1")
	case p.Tools < 0 || p.Chunks < 1:
		return errors.New("tools must not be negative, chunks must be at least 1")
	case p.Format != "v0" && p.Format != "v4" && p.Format != "mix":
		return fmt.Errorf("format %q: want v0, v4 or mix", p.Format)
	case p.Wrapped && p.Format != "v4":
		return errors.New("-wrapped writes v4 events only (-format v4)")
	case p.OpenLast && p.Tools < 1:
		return errors.New("-open-last leaves tool calls in flight: -tools must be at least 1")
	}
	return nil
}

// output is a buffered file that counts its bytes.
type output struct {
	f *os.File
	w *bufio.Writer
	n int64
}

func create(path string) (*output, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &output{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (o *output) write(b []byte) {
	o.w.Write(b)
	o.n += int64(len(b))
}

func (o *output) close() error {
	err := o.w.Flush()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// session writes one session's rows.
type session struct {
	p       Params
	rng     *rand.Rand
	id      string
	version int
	out     *output

	buf    []byte
	seq    int64 // next seq = events so far
	time   int64 // ms
	rows   int64
	closed int64
	open   int64
	spans  int64
	msgs   int // message ids issued
}

func newSession(p Params, i int) *session {
	rng := rand.New(rand.NewPCG(p.Seed, uint64(i)))
	s := &session{p: p, rng: rng, version: 4}
	if p.Format == "v0" || (p.Format == "mix" && i%2 == 0) {
		s.version = 0
	}
	s.id = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
		rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff)
	s.time = 1_790_000_000_000 + int64(i)*7_919
	return s
}

var (
	words = []string{"the", "file", "reads", "module", "config", "test", "passes", "error", "handler",
		"returns", "value", "builds", "on", "each", "request", "we", "should", "check", "first",
		"then", "update", "this", "function", "and", "run", "again", "looks", "fine", "now", "done"}
	toolNames = []string{"bash", "read_file", "write_file", "grep", "edit"}
)

const (
	provider = "deepseek-official"
	model    = "deepseek-v4-flash"
)

func (s *session) write() {
	if !s.p.Wrapped {
		s.begin()
		if s.version == 0 {
			s.raw(`{"type":"session","version":0,"id":`)
		} else {
			s.raw(`{"type":"session","version":4,"id":`)
		}
		s.str(s.id)
		s.raw(`,"createdAt":`)
		s.int(s.time)
		s.raw(`,"cwd":"/home/bench/proj"`)
		if s.version != 0 {
			s.raw(`,"isSeeded":false`)
		}
		s.raw(`,"delegationDepth":0}`)
		s.end()
	}
	for t := 1; t <= s.p.Turns; t++ {
		s.turn(t, t == s.p.Turns && s.p.OpenLast)
	}
}

// turn writes turn t; open leaves it in its first step with the tool calls
// in flight.
func (s *session) turn(t int, open bool) {
	prompt := s.words(4 + s.rng.IntN(12))
	msgID := s.msgID()
	s.event("agent/inbox/spliced", func() {
		s.raw(`{"target":"next-turn","start":0,"inserted":[`)
		s.userMessage(msgID, prompt)
		s.raw(`]}`)
	})
	s.event("turn/start", func() { s.raw(`{"turn":`); s.int(int64(t)); s.raw(`}`) })
	s.event("agent/inbox/spliced", func() {
		s.raw(`{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}`)
	})
	steps := s.p.Steps
	if open {
		steps = 1
	}
	for st := 1; st <= steps; st++ {
		s.event("step/start", func() { s.stepData(t, st); s.raw(`}`) })
		if st == 1 {
			promptSeq := s.seq
			s.surface("user/message", func() { s.userMessage(msgID, prompt) }, -1)
			if t == 1 {
				s.requestState(promptSeq)
			}
		}
		last := st == s.p.Steps && !open
		tools := 0
		if !last {
			tools = s.p.Tools
		}
		calls := s.modelCall(t, st, tools)
		callSeqs := make([]int64, len(calls))
		for i, c := range calls {
			callSeqs[i] = s.seq
			s.event("tool/call", func() {
				s.stepData(t, st)
				s.raw(`,"callId":`)
				s.str(c.id)
				s.raw(`,"name":`)
				s.str(c.name)
				s.raw(`,"arguments":`)
				s.str(c.args)
				s.raw(`}`)
			})
		}
		if open {
			s.open++
			return
		}
		for i, c := range calls {
			s.toolResult(t, st, c, callSeqs[i])
		}
		s.event("step/end", func() { s.stepData(t, st); s.raw(`}`) })
		s.spans += 2 + int64(len(calls)) // step, chat, tools
	}
	s.event("turn/end", func() {
		s.raw(`{"turn":`)
		s.int(int64(t))
		s.raw(`,"reason":{"kind":"completed"}}`)
	})
	s.closed++
	s.spans++ // the turn
}

// requestState writes what dsh logs in the first step of a session: the
// request header and context, and the session title citing the prompt.
func (s *session) requestState(promptSeq int64) {
	s.event("request/header", func() {
		s.raw(`{"header":{"config":{"provider":"` + provider + `","model":"` + model + `"},`)
		if s.version == 0 {
			s.raw(`"system":"You are a coding agent.",`)
		}
		s.raw(`"tools":[`)
		for i, n := range toolNames {
			if i > 0 {
				s.raw(`,`)
			}
			s.raw(`{"name":"` + n + `","description":"The ` + n + ` tool","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}`)
		}
		s.raw(`]},"reason":"initial"}`)
	})
	s.event("request/context", func() {
		s.raw(`{"provider":"` + provider + `","model":"` + model + `","contextWindow":128000}`)
	})
	s.event("session/title", func() {
		s.raw(`{"title":"bench session","messageSeqs":[`)
		s.int(promptSeq)
		s.raw(`],"source":{"kind":"fallback"}}`)
	})
}

type call struct{ id, name, args string }

// block is one content block of a model call and its stream.
type block struct {
	kind   string // reasoning, text, tool-call
	pieces []string
	times  []int64
	call   call
}

// modelCall writes one committed model call asking for n tools: v0 as
// assistant/chunk events and packed rows followed by assistant/message
// citing them, v4 as assistant/message with the embedded stream.
func (s *session) modelCall(t, st, n int) []call {
	var blocks []block
	for _, kind := range []string{"reasoning", "text"} {
		b := block{kind: kind}
		for k := range s.p.Chunks {
			w := words[s.rng.IntN(len(words))]
			if k > 0 {
				w = " " + w
			}
			b.pieces = append(b.pieces, w)
		}
		blocks = append(blocks, b)
	}
	calls := make([]call, n)
	for i := range calls {
		name := toolNames[s.rng.IntN(len(toolNames))]
		args := `{"path":"src/` + words[s.rng.IntN(len(words))] + "_" + strconv.Itoa(s.rng.IntN(1000)) + `.go"}`
		c := call{id: fmt.Sprintf("call_%d_%d_%d", t, st, i+1), name: name, args: args}
		calls[i] = c
		third := len(args) / 3
		blocks = append(blocks, block{kind: "tool-call", call: c,
			pieces: []string{args[:third], args[third : 2*third], args[2*third:]}})
	}
	in, out := 200+s.rng.IntN(4000), 20+s.rng.IntN(400)
	cached := s.rng.IntN(8000)
	finish := "stop"
	if n > 0 {
		finish = "tool-calls"
	}
	// Stream times: block start, each delta a few ms apart, block end.
	s.time += 300 + int64(s.rng.IntN(900))
	start := s.time
	for i := range blocks {
		b := &blocks[i]
		for range b.pieces {
			s.time += int64(s.rng.IntN(30))
			b.times = append(b.times, s.time)
		}
	}

	var cited []int64 // v0: the chunk seqs of the attempt
	if s.version == 0 {
		for i, b := range blocks {
			cited = append(cited, s.seq)
			s.chunk(t, st, s.blockStart(i, b))
			cited = append(cited, s.chunkRun(t, st, i, b)...)
			cited = append(cited, s.seq)
			s.chunk(t, st, s.blockEnd(i, b))
		}
		cited = append(cited, s.seq)
		s.chunk(t, st, func() { s.usageChunk(in, out, cached) })
		cited = append(cited, s.seq)
		s.chunk(t, st, func() { s.raw(`{"type":"finish","reason":{"kind":"` + finish + `"}}`) })
	}
	s.time++
	s.event2("assistant/message", func() {
		s.stepData(t, st)
		s.raw(`,"message":{"id":`)
		s.str(s.msgID())
		s.raw(`,"role":"assistant","content":[`)
		for i, b := range blocks {
			if i > 0 {
				s.raw(`,`)
			}
			s.contentBlock(b)
		}
		s.raw(`],"source":{"kind":"model","provider":"` + provider + `","model":"` + model + `"}}`)
		s.raw(`,"usage":`)
		s.usage(in, out, cached)
		if s.version != 0 {
			s.raw(`,"stream":[`)
			for i, b := range blocks {
				if i > 0 {
					s.raw(`,`)
				}
				s.streamRecord(start, s.blockStart(i, b))
				s.raw(`,`)
				s.streamRun(i, b)
				s.raw(`,`)
				s.streamRecord(b.times[len(b.times)-1], s.blockEnd(i, b))
			}
			s.raw(`,`)
			s.streamRecord(s.time, func() { s.usageChunk(in, out, cached) })
			s.raw(`,`)
			s.streamRecord(s.time, func() { s.raw(`{"type":"finish","reason":{"kind":"` + finish + `"}}`) })
			s.raw(`]}`)
		} else {
			s.raw(`}`)
		}
	}, func() {
		if s.version == 0 {
			s.raw(`,"surfaceOp":"append","sourceEventSeqs":[`)
			for i, q := range cited {
				if i > 0 {
					s.raw(`,`)
				}
				s.int(q)
			}
			s.raw(`]`)
		} else {
			s.raw(`,"surfaceOp":"append"`)
		}
	})
	return calls
}

func (s *session) blockStart(i int, b block) func() {
	return func() {
		s.raw(`{"type":"block-start","index":`)
		s.int(int64(i))
		s.raw(`,"blockType":"` + b.kind + `"}`)
	}
}

func (s *session) blockEnd(i int, b block) func() {
	return func() {
		s.raw(`{"type":"block-end","index":`)
		s.int(int64(i))
		s.raw(`,"block":`)
		s.contentBlock(b)
		s.raw(`}`)
	}
}

func (s *session) contentBlock(b block) {
	if b.kind == "tool-call" {
		s.raw(`{"type":"tool-call","id":`)
		s.str(b.call.id)
		s.raw(`,"name":`)
		s.str(b.call.name)
		s.raw(`,"arguments":`)
		s.str(b.call.args)
		s.raw(`}`)
		return
	}
	s.raw(`{"type":"` + b.kind + `","text":`)
	text := ""
	for _, p := range b.pieces {
		text += p
	}
	s.str(text)
	s.raw(`}`)
}

func (s *session) usage(in, out, cached int) {
	s.raw(`{"inputTokens":`)
	s.int(int64(in))
	s.raw(`,"outputTokens":`)
	s.int(int64(out))
	s.raw(`,"cacheReadTokens":`)
	s.int(int64(cached))
	s.raw(`}`)
}

func (s *session) usageChunk(in, out, cached int) {
	s.raw(`{"type":"usage","usage":`)
	s.usage(in, out, cached)
	s.raw(`}`)
}

// deltaKind names a block's delta chunk type and packed-row type.
func deltaKind(kind string) (chunk, row string) {
	switch kind {
	case "reasoning":
		return "reasoning-delta", "reasoning-chunks"
	case "text":
		return "text-delta", "text-chunks"
	}
	return "tool-call-delta", "tool-call-chunks"
}

// chunkRun writes a v0 block's deltas: one packed row when there are three
// or more (dsh's writer rule), else loose assistant/chunk events. It
// returns their seqs.
func (s *session) chunkRun(t, st, index int, b block) []int64 {
	seqs := make([]int64, len(b.pieces))
	for k := range seqs {
		seqs[k] = s.seq + int64(k)
	}
	chunkType, rowType := deltaKind(b.kind)
	if len(b.pieces) < 3 {
		for k, p := range b.pieces {
			s.time = b.times[k]
			s.chunk(t, st, func() {
				s.raw(`{"type":"` + chunkType + `","index":`)
				s.int(int64(index))
				if b.kind == "tool-call" {
					s.raw(`,"id":`)
					s.str(b.call.id)
					s.raw(`,"name":`)
					s.str(b.call.name)
					s.raw(`,"argumentsDelta":`)
				} else {
					s.raw(`,"text":`)
				}
				s.str(p)
				s.raw(`}`)
			})
		}
		return seqs
	}
	s.begin()
	s.raw(`{"type":"` + rowType + `","seq0":`)
	s.int(s.seq)
	s.raw(`,"time0":`)
	s.int(b.times[0])
	s.raw(`,"data":`)
	s.stepData(t, st)
	s.raw(`,"index":`)
	s.int(int64(index))
	s.raw(`,"dt":`)
	s.dts(b.times)
	if b.kind == "tool-call" {
		s.raw(`,"id":`)
		s.str(b.call.id)
		s.raw(`,"name":`)
		s.str(b.call.name)
		s.raw(`,"args":`)
	} else {
		s.raw(`,"texts":`)
	}
	s.strs(b.pieces)
	s.raw(`}}`)
	s.end()
	s.seq += int64(len(b.pieces))
	return seqs
}

// streamRun writes a v4 block's deltas as one stream record.
func (s *session) streamRun(index int, b block) {
	_, rowType := deltaKind(b.kind)
	s.raw(`{"type":"` + rowType + `","time0":`)
	s.int(b.times[0])
	s.raw(`,"index":`)
	s.int(int64(index))
	s.raw(`,"dt":`)
	s.dts(b.times)
	if b.kind == "tool-call" {
		s.raw(`,"id":`)
		s.str(b.call.id)
		s.raw(`,"name":`)
		s.str(b.call.name)
		s.raw(`,"args":`)
	} else {
		s.raw(`,"texts":`)
	}
	s.strs(b.pieces)
	s.raw(`}`)
}

func (s *session) streamRecord(time int64, chunk func()) {
	s.raw(`{"type":"chunk","time":`)
	s.int(time)
	s.raw(`,"chunk":`)
	chunk()
	s.raw(`}`)
}

// chunk writes one v0 assistant/chunk event.
func (s *session) chunk(t, st int, chunk func()) {
	s.event("assistant/chunk", func() {
		s.stepData(t, st)
		s.raw(`,"chunk":`)
		chunk()
		s.raw(`}`)
	})
}

func (s *session) toolResult(t, st int, c call, callSeq int64) {
	isError := s.rng.IntN(10) == 0
	out := s.words(5 + s.rng.IntN(60))
	if isError {
		out = "Error: " + out
	}
	s.time += 5 + int64(s.rng.IntN(400))
	s.surface("tool/result", func() {
		s.stepData(t, st)
		s.raw(`,"message":{"id":`)
		s.str(s.msgID())
		if s.version == 0 {
			s.raw(`,"role":"user","source":{"kind":"tool","callId":`)
			s.str(c.id)
			s.raw(`},"content":[{"type":"tool-result","toolCallId":`)
			s.str(c.id)
			s.raw(`,"content":[{"type":"text","text":`)
			s.str(out)
			s.raw(`}],"isError":` + strconv.FormatBool(isError) + `}]}`)
		} else {
			s.raw(`,"role":"tool","source":{"kind":"tool","callId":`)
			s.str(c.id)
			s.raw(`},"toolCallId":`)
			s.str(c.id)
			s.raw(`,"content":[{"type":"text","text":`)
			s.str(out)
			s.raw(`}]`)
			if isError {
				s.raw(`,"isError":true`)
			}
			s.raw(`}`)
		}
		if isError {
			s.raw(`,"error":{"name":"CommandFailedError","code":"COMMAND_FAILED"}`)
		}
		s.raw(`}`)
	}, callSeq)
}

func (s *session) userMessage(id, text string) {
	s.raw(`{"id":`)
	s.str(id)
	s.raw(`,"role":"user","content":[{"type":"text","text":`)
	s.str(text)
	s.raw(`}],"source":{"kind":"user"}}`)
}

func (s *session) stepData(t, st int) {
	s.raw(`{"turn":`)
	s.int(int64(t))
	s.raw(`,"step":`)
	s.int(int64(st))
}

// event writes one event row of the given type whose data data writes.
func (s *session) event(typ string, data func()) { s.event2(typ, data, nil) }

// surface writes a surface event appended to the surface, citing cite
// when it is not negative.
func (s *session) surface(typ string, data func(), cite int64) {
	s.event2(typ, data, func() {
		s.raw(`,"surfaceOp":"append"`)
		if cite >= 0 {
			s.raw(`,"sourceEventSeqs":[`)
			s.int(cite)
			s.raw(`]`)
		}
	})
}

func (s *session) event2(typ string, data, tail func()) {
	s.time += int64(s.rng.IntN(20))
	s.begin()
	s.raw(`{"type":"` + typ + `","seq":`)
	s.int(s.seq)
	s.raw(`,"time":`)
	s.int(s.time)
	s.raw(`,"data":`)
	data()
	if tail != nil {
		tail()
	}
	s.raw(`}`)
	s.end()
	s.seq++
}

// begin starts a row; with -wrapped, inside a stream-json line.
func (s *session) begin() {
	s.buf = s.buf[:0]
	if s.p.Wrapped {
		s.raw(`{"type":"session_event","sessionId":`)
		s.str(s.id)
		s.raw(`,"event":`)
	}
}

func (s *session) end() {
	if s.p.Wrapped {
		s.raw(`}`)
	}
	s.buf = append(s.buf, '\n')
	s.out.write(s.buf)
	s.rows++
}

func (s *session) raw(v string) { s.buf = append(s.buf, v...) }
func (s *session) int(n int64)  { s.buf = strconv.AppendInt(s.buf, n, 10) }

// str appends v as a JSON string. The generator's strings are printable
// ASCII, so quotes and backslashes are all there is to escape.
func (s *session) str(v string) {
	s.buf = append(s.buf, '"')
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '"' || c == '\\' {
			s.buf = append(s.buf, '\\', c)
		} else {
			s.buf = append(s.buf, c)
		}
	}
	s.buf = append(s.buf, '"')
}

func (s *session) strs(vs []string) {
	s.raw(`[`)
	for i, v := range vs {
		if i > 0 {
			s.raw(`,`)
		}
		s.str(v)
	}
	s.raw(`]`)
}

// dts appends the gaps between consecutive times.
func (s *session) dts(times []int64) {
	s.raw(`[`)
	for k := 1; k < len(times); k++ {
		if k > 1 {
			s.raw(`,`)
		}
		s.int(times[k] - times[k-1])
	}
	s.raw(`]`)
}

func (s *session) words(n int) string {
	b := make([]byte, 0, n*7)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, words[s.rng.IntN(len(words))]...)
	}
	return string(b)
}

func (s *session) msgID() string {
	s.msgs++
	return fmt.Sprintf("%s-m%d", s.id[:8], s.msgs)
}
