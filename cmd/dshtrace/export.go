package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/dshtrace/dshtrace/internal/clientid"
	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// runExport writes the model calls of the turns a filter selects (by
// finding, end reason, agent or model) as JSONL: each call's request as
// the model saw it (derive's projection), the tools offered, the answer
// and the rows it came from — the start of an eval or fine-tuning set.
// Exit 0 when a call was written, 1 when none matched, 2 on input it
// cannot read.
func runExport(e *env, args []string) error {
	fs := newFlags("export")
	var sel turnFilter
	fs.StringVar(&sel.finding, "finding", "", "only turns with a finding `NAME` (tool_loop, tool_error_streak, …; see dshtrace findings)")
	fs.StringVar(&sel.reason, "reason", "", "only turns that ended for reason `KIND` (completed, error, aborted, max-tokens, …; dangling for turns never closed)")
	fs.StringVar(&sel.agent, "agent", "", "only turns of agent `NAME`")
	fs.StringVar(&sel.model, "model", "", "only turns with a call to model `NAME` (or PROVIDER/MODEL)")
	out := fs.String("o", "-", "write the JSONL to `FILE` (- for standard output); never onto an input, a directory or a device")
	session := sessionFlag(fs)
	paths, err := parseArgs(e, fs, args, someFiles)
	if err != nil {
		return err
	}
	if err := checkOutput(*out, paths); err != nil {
		return &exitError{code: 2, err: err}
	}
	written, bad := 0, false
	write := func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		for _, p := range paths {
			logs, err := logsOf(p)
			if err != nil {
				fmt.Fprintf(e.stderr, "dshtrace export: %v\n", err)
				bad = true
				continue
			}
			for _, l := range logs {
				n, err := exportLog(e, bw, l, sel, *session)
				written += n
				if err != nil {
					fmt.Fprintf(e.stderr, "dshtrace export: %v\n", err)
					bad = true
				}
			}
		}
		if written == 0 {
			return errNoCall // leaves no file behind
		}
		return bw.Flush()
	}
	if *out == "-" {
		err = write(e.stdout)
	} else {
		err = writeFile(*out, write)
	}
	switch {
	case bad:
		return &exitError{code: 2}
	case written == 0:
		return &exitError{code: 1, err: fmt.Errorf("no model call matched%s", sel)}
	}
	return err
}

// errNoCall ends an export that found nothing to write.
var errNoCall = errors.New("no model call matched")

// turnFilter selects turns; a field left empty selects every turn.
type turnFilter struct {
	finding, reason, agent, model string
}

// String is the filter as the flags that set it, for the message that
// nothing matched.
func (f turnFilter) String() string {
	s := ""
	for _, kv := range [][2]string{{"finding", f.finding}, {"reason", f.reason}, {"agent", f.agent}, {"model", f.model}} {
		if kv[1] != "" {
			s += " --" + kv[0] + " " + kv[1]
		}
	}
	if s == "" {
		return ""
	}
	return " (" + s[1:] + ")"
}

// selects reports whether a closed turn, whose model calls are calls,
// passes every filter given.
func (f turnFilter) selects(t *turnengine.Turn, calls []*modelCall) bool {
	if f.reason != "" && t.Reason.Kind != f.reason {
		return false
	}
	if f.agent != "" && t.Agent != f.agent {
		return false
	}
	if f.finding != "" && !slices.ContainsFunc(t.Findings, func(fd findings.Finding) bool { return fd.Name == f.finding }) {
		return false
	}
	if f.model != "" && !slices.ContainsFunc(calls, func(c *modelCall) bool {
		p := c.Provenance
		return p.Model == f.model || p.Provider+"/"+p.Model == f.model
	}) {
		return false
	}
	return true
}

// modelCall is one line of the export: one step's model call.
type modelCall struct {
	// Request is the model-visible history when the call began, as
	// derive --before-step prints it.
	Request sessionlog.History `json:"request"`
	// System is the request header's system prompt (dsh v0–v2 keep it
	// there, not in the history).
	System json.RawMessage `json:"system,omitempty"`
	// Tools are the tool definitions the request header offered.
	Tools      json.RawMessage `json:"tools"`
	Answer     answer          `json:"answer"`
	Provenance provenance      `json:"provenance"`
}

// answer is the assistant message a call produced; Content is [] for a
// committed message without content (a max-tokens stop), which the
// history leaves out.
type answer struct {
	Seq     int64           `json:"seq"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// provenance says where a call's line came from.
type provenance struct {
	File    string `json:"file"`
	Session string `json:"session"`
	Client  string `json:"client,omitempty"`
	Turn    int64  `json:"turn"`
	Step    int64  `json:"step"`
	// Seqs are the rows the line is built from: the request's messages,
	// the request header, and the answer.
	Seqs     []int64 `json:"seqs"`
	Provider string  `json:"provider,omitempty"`
	Model    string  `json:"model,omitempty"`
}

// requestHeader is what a request/header sets for the calls that follow.
type requestHeader struct {
	seq             int64
	system, tools   json.RawMessage
	provider, model string
}

// readRequestHeader reads a request/header's tools, system prompt and
// model.
func readRequestHeader(e *sessionlog.Event) *requestHeader {
	var env struct {
		Data struct {
			Header struct {
				System json.RawMessage `json:"system"`
				Tools  json.RawMessage `json:"tools"`
			} `json:"header"`
		} `json:"data"`
	}
	json.Unmarshal(e.LogicalJSON(), &env) // a header that does not decode offers nothing
	return &requestHeader{seq: e.Seq, system: env.Data.Header.System, tools: env.Data.Header.Tools,
		provider: e.Provider, model: e.Model}
}

// turnKey names a turn of a log.
type turnKey struct {
	session string
	turn    int64
}

// callCollector follows one log's sessions event by event and keeps the
// model calls of every turn.
type callCollector struct {
	log      sessionLog
	sessions map[string]*sessionCalls
	calls    map[turnKey][]*modelCall
	order    []turnKey // turns in the order of their first call
}

// sessionCalls is one session's derivation and the call being read.
type sessionCalls struct {
	d      *sessionlog.Deriver
	header *requestHeader
	// cur is the model call of the open step, nil before its first model
	// event; curTurn and curStep name the open step.
	cur              *modelCall
	curTurn, curStep int64
	answered         bool
}

// event folds one event of session id, as derive does, and notes where
// a step's model call begins (its first model event, before which the
// request is the history) and what it answered.
func (c *callCollector) event(id string, e *sessionlog.Event, f sessionlog.Format) {
	s := c.sessions[id]
	if s == nil {
		s = &sessionCalls{d: sessionlog.NewDeriver()}
		c.sessions[id] = s
	}
	inStep := e.HasTurn && e.HasStep && e.Turn == s.curTurn && e.Step == s.curStep
	switch {
	case e.Type == "request/header":
		s.header = readRequestHeader(e)
	case e.Type == "step/start" && e.HasTurn && e.HasStep:
		c.endCall(id, s)
		s.curTurn, s.curStep = e.Turn, e.Step
	case inStep && s.cur == nil && (e.Type == "assistant/chunk" || e.Type == "assistant/attempt" ||
		e.Type == "assistant/message" || e.Type == "step/end"):
		s.cur = c.newCall(id, s)
	}
	before, had := s.d.Last()
	s.d.Event(e, f)
	if s.cur == nil || !inStep {
		return
	}
	if last, ok := s.d.Last(); ok && last.Role() == "assistant" && (!had || last.Seq() != before.Seq()) {
		s.cur.Answer = answer{Seq: last.Seq(), Role: "assistant", Content: json.RawMessage(last.Content())}
		s.answered = true
	}
	switch e.Type {
	case "assistant/message":
		if !s.answered { // committed with no content: derive leaves it out
			s.cur.Answer = answer{Seq: e.Seq, Role: "assistant", Content: json.RawMessage("[]")}
			s.answered = true
		}
		if e.Model != "" {
			s.cur.Provenance.Provider, s.cur.Provenance.Model = e.Provider, e.Model
		}
	case "step/end":
		c.endCall(id, s)
	}
}

// newCall starts the call of session s's open step with its request.
func (c *callCollector) newCall(id string, s *sessionCalls) *modelCall {
	_, sid := clientid.Split(id)
	m := &modelCall{Request: s.d.History(), Tools: json.RawMessage("[]"),
		Provenance: provenance{File: c.log.path, Session: sid, Client: c.log.client, Turn: s.curTurn, Step: s.curStep}}
	if h := s.header; h != nil {
		m.System = h.system
		if len(h.tools) > 0 && string(h.tools) != "null" {
			m.Tools = h.tools
		}
		m.Provenance.Provider, m.Provenance.Model = h.provider, h.model
	}
	s.answered = false
	return m
}

// endCall keeps session s's call, if it has one and it answered, under
// its turn.
func (c *callCollector) endCall(id string, s *sessionCalls) {
	m := s.cur
	s.cur, s.curTurn, s.curStep = nil, 0, 0
	if m == nil || !s.answered {
		return
	}
	for _, msg := range m.Request.All() {
		m.Provenance.Seqs = append(m.Provenance.Seqs, msg.Seq())
	}
	if s.header != nil {
		m.Provenance.Seqs = append(m.Provenance.Seqs, s.header.seq)
	}
	m.Provenance.Seqs = append(m.Provenance.Seqs, m.Answer.Seq)
	slices.Sort(m.Provenance.Seqs)
	m.Provenance.Seqs = slices.Compact(m.Provenance.Seqs)
	k := turnKey{id, m.Provenance.Turn}
	if _, ok := c.calls[k]; !ok {
		c.order = append(c.order, k)
	}
	c.calls[k] = append(c.calls[k], m)
}

// exportLog writes the model calls of the selected turns of one log and
// counts them.
func exportLog(e *env, w io.Writer, l sessionLog, sel turnFilter, session string) (int, error) {
	f, err := openInput(l.path, e.stdin)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in, err := newInput(l.path, f, session, e.stderr, false)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	eng := turnengine.New(turnengine.Config{})
	c := &callCollector{log: l, sessions: map[string]*sessionCalls{}, calls: map[turnKey][]*modelCall{}}
	now := time.Now()
	for {
		row, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		id, _ := in.sessionOf(row)
		for i := range row.Events {
			ev := &row.Events[i]
			c.event(id, ev, in.Format())
			eng.Ingest(turnengine.Input{SessionID: id, Event: ev, Format: in.Format(), Header: in.Header()}, now)
		}
	}
	for _, id := range in.Sessions() { // the steps the log ends in, in a stable order
		if s := c.sessions[id]; s != nil {
			c.endCall(id, s)
		}
	}
	eng.Flush(turnengine.CauseEndOfInput, now)
	closed := map[turnKey]*turnengine.Turn{}
	for _, t := range eng.Drain() {
		if t.Late == nil && !t.Fragment {
			closed[turnKey{t.SessionID, t.Number}] = t
		}
	}
	n := 0
	for _, k := range c.order {
		t := closed[k]
		if t == nil || !sel.selects(t, c.calls[k]) {
			continue
		}
		for _, m := range c.calls[k] {
			if err := writeJSONLine(w, m); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
