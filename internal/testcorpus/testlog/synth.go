package testlog

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog"
)

// Synth writes a v4 session of turns turns, each with steps steps and
// one tool call per step, the last turn left open when open is true.
func Synth(session string, turns, steps int, open bool) string {
	l := newV4Log(session)
	ev := l.event
	for tn := 1; tn <= turns; tn++ {
		ev("turn/start", fmt.Sprintf(`{"turn":%d}`, tn), "")
		for st := 1; st <= steps; st++ {
			ev("step/start", fmt.Sprintf(`{"turn":%d,"step":%d}`, tn, st), "")
			call := fmt.Sprintf("c%d_%d", tn, st)
			ev("assistant/message", fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":"m%d","role":"assistant","content":[{"type":"tool-call","id":%q,"name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":10,"outputTokens":2},"stream":[]}`, tn, st, l.seq, call), `,"surfaceOp":"append"`)
			ev("tool/call", fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"name":"bash","arguments":"{}"}`, tn, st, call), "")
			ev("tool/result", fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":"r%d","role":"tool","toolCallId":%q,"content":[{"type":"text","text":"ok"}],"source":{"kind":"tool","callId":%q}}}`, tn, st, l.seq, call, call), fmt.Sprintf(`,"sourceEventSeqs":[%d],"surfaceOp":"append"`, l.seq-1))
			ev("step/end", fmt.Sprintf(`{"turn":%d,"step":%d}`, tn, st), "")
		}
		if tn < turns || !open {
			ev("turn/end", fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, tn), "")
		}
	}
	return l.b.String()
}

// Source synthesizes a v4 session's events one at a time, as decoded
// rows, so a test can feed millions without holding them.
type Source struct {
	dec     *sessionlog.RowDecoder
	session string
	seq     int64
	turn    int64
	step    int64
	phase   int
	steps   int64 // steps per turn
	done    int64 // steps of the current turn ended so far
}

// FinishedSteps is how many steps of the current turn have ended.
func (s *Source) FinishedSteps() int64 { return s.done }

// NewSource returns the source of an endless v4 session named session,
// its header decoded already, each turn of stepsPerTurn steps.
func NewSource(session string, stepsPerTurn int64) *Source {
	s := &Source{dec: sessionlog.NewRowDecoder(0, 0), session: session, steps: stepsPerTurn}
	hdr := fmt.Sprintf(`{"type":"session","version":4,"id":%q,"createdAt":1,"isSeeded":false,"delegationDepth":0}`, session)
	if _, err := s.dec.Decode([]byte(hdr), 1); err != nil {
		panic(err)
	}
	return s
}

// Next returns the next event of an endless sequence of turns, each with
// s.steps steps of one model call and one tool call.
func (s *Source) Next() *sessionlog.Event {
	var line string
	t := 1_800_000_000_000 + s.seq*5
	switch s.phase {
	case 0:
		s.turn++
		s.step, s.done = 0, 0
		line = fmt.Sprintf(`{"type":"turn/start","seq":%d,"time":%d,"data":{"turn":%d}}`, s.seq, t, s.turn)
	case 1:
		s.step++
		line = fmt.Sprintf(`{"type":"step/start","seq":%d,"time":%d,"data":{"turn":%d,"step":%d}}`, s.seq, t, s.turn, s.step)
	case 2:
		line = fmt.Sprintf(`{"type":"assistant/message","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"message":{"id":"m%d","role":"assistant","content":[{"type":"tool-call","id":"c%d","name":"bash","arguments":"{}"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":100,"outputTokens":20},"stream":[{"type":"chunk","time":%d,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}]},"surfaceOp":"append"}`, s.seq, t, s.turn, s.step, s.seq, s.seq, t)
	case 3:
		line = fmt.Sprintf(`{"type":"tool/call","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"callId":"c%d","name":"bash","arguments":"{}"}}`, s.seq, t, s.turn, s.step, s.seq-1)
	case 4:
		line = fmt.Sprintf(`{"type":"tool/result","seq":%d,"time":%d,"data":{"turn":%d,"step":%d,"message":{"id":"r%d","role":"tool","toolCallId":"c%d","content":[{"type":"text","text":"ok"}],"source":{"kind":"tool","callId":"c%d"}}},"sourceEventSeqs":[%d],"surfaceOp":"append"}`, s.seq, t, s.turn, s.step, s.seq, s.seq-2, s.seq-2, s.seq-1)
	case 5:
		line = fmt.Sprintf(`{"type":"step/end","seq":%d,"time":%d,"data":{"turn":%d,"step":%d}}`, s.seq, t, s.turn, s.step)
		s.done++
	case 6:
		line = fmt.Sprintf(`{"type":"turn/end","seq":%d,"time":%d,"data":{"turn":%d,"reason":{"kind":"completed"}}}`, s.seq, t, s.turn)
	}
	switch {
	case s.phase == 5 && s.step < s.steps:
		s.phase = 1
	case s.phase == 6:
		s.phase = 0
	default:
		s.phase++
	}
	row, err := s.dec.Decode([]byte(line), int(s.seq)+2)
	if err != nil || len(row.Events) != 1 {
		panic(fmt.Sprintf("synthetic row %d: %v %v", s.seq, err, row.Problems))
	}
	s.seq++
	return &row.Events[0]
}

// Format is the format of the source's rows.
func (s *Source) Format() sessionlog.Format { return s.dec.Format() }

// Header is the source's session header.
func (s *Source) Header() *sessionlog.Header { return s.dec.Header() }

// Session is the source's session id.
func (s *Source) Session() string { return s.session }

// Call is one tool call of SynthCalls: the tool, its arguments (JSON
// text), its result's text and whether it failed; NoResult leaves it
// without one.
type Call struct {
	Tool, Args, Result string
	Failed, NoResult   bool
}

// SynthCalls writes a v4 session of one turn, one step per call, ended by
// dsh when end is true: the turns that findings are made of.
func SynthCalls(session string, calls []Call, end bool) string {
	l := newV4Log(session)
	ev := l.event
	ev("turn/start", `{"turn":1}`, "")
	for i, c := range calls {
		st := i + 1
		id := fmt.Sprintf("call_%d", st)
		args, _ := json.Marshal(c.Args)
		ev("step/start", fmt.Sprintf(`{"turn":1,"step":%d}`, st), "")
		ev("assistant/message", fmt.Sprintf(`{"turn":1,"step":%d,"message":{"id":"m%d","role":"assistant","content":[{"type":"tool-call","id":%q,"name":%q,"arguments":%s}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":10,"outputTokens":2},"stream":[]}`, st, l.seq, id, c.Tool, args), `,"surfaceOp":"append"`)
		ev("tool/call", fmt.Sprintf(`{"turn":1,"step":%d,"callId":%q,"name":%q,"arguments":%s}`, st, id, c.Tool, args), "")
		if !c.NoResult {
			text, _ := json.Marshal(c.Result)
			errFlag := ""
			if c.Failed {
				errFlag = `,"isError":true`
			}
			ev("tool/result", fmt.Sprintf(`{"turn":1,"step":%d,"message":{"id":"r%d","role":"tool","toolCallId":%q,"content":[{"type":"text","text":%s}],"source":{"kind":"tool","callId":%q}%s}}`, st, l.seq, id, text, id, errFlag), fmt.Sprintf(`,"sourceEventSeqs":[%d],"surfaceOp":"append"`, l.seq-1))
		}
		ev("step/end", fmt.Sprintf(`{"turn":1,"step":%d}`, st), "")
	}
	if end {
		ev("turn/end", `{"turn":1,"reason":{"kind":"completed"}}`, "")
	}
	return l.b.String()
}

// Turn is one turn of SynthTurns: End is its turn/end's reason as JSON
// (`{"kind":"error","error":{…}}`), empty to leave it open (the last turn
// only); Loop makes every step the same tool call with the same result (a
// tool_loop finding from three steps on). Otherwise each step calls a tool
// with arguments of its own.
type Turn struct {
	End  string
	Loop bool
}

// Completed is the reason of a turn that finished normally.
const Completed = `{"kind":"completed"}`

// MixedTurns are a session's turns of mixed outcomes, for the tests of
// what went wrong: clean ones, an error, a tool loop (a finding) and a
// max-tokens stop.
func MixedTurns() []Turn {
	return []Turn{
		{End: Completed},
		{End: `{"kind":"error","error":{"message":"rate limited","code":"RATE_LIMIT"}}`},
		{End: Completed},
		{End: Completed, Loop: true},
		{End: `{"kind":"max-tokens"}`},
		{End: Completed},
	}
}

// SynthTurns writes a v4 session of the given turns, steps steps each,
// one tool call per step.
func SynthTurns(session string, steps int, turns []Turn) string {
	l := newV4Log(session)
	ev := l.event
	for i, turn := range turns {
		tn := i + 1
		ev("turn/start", fmt.Sprintf(`{"turn":%d}`, tn), "")
		for st := 1; st <= steps; st++ {
			ev("step/start", fmt.Sprintf(`{"turn":%d,"step":%d}`, tn, st), "")
			call := fmt.Sprintf("c%d_%d", tn, st)
			args, result := fmt.Sprintf(`{\"path\":\"f%d\"}`, st), fmt.Sprintf("line %d", st)
			if turn.Loop {
				args, result = `{\"path\":\"same\"}`, "same"
			}
			ev("assistant/message", fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":"m%d","role":"assistant","content":[{"type":"tool-call","id":%q,"name":"read","arguments":"%s"}],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":10,"outputTokens":2},"stream":[]}`, tn, st, l.seq, call, args), `,"surfaceOp":"append"`)
			ev("tool/call", fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%q,"name":"read","arguments":"%s"}`, tn, st, call, args), "")
			ev("tool/result", fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":"r%d","role":"tool","toolCallId":%q,"content":[{"type":"text","text":%q}],"source":{"kind":"tool","callId":%q}}}`, tn, st, l.seq, call, result, call), fmt.Sprintf(`,"sourceEventSeqs":[%d],"surfaceOp":"append"`, l.seq-1))
			ev("step/end", fmt.Sprintf(`{"turn":%d,"step":%d}`, tn, st), "")
		}
		if turn.End != "" {
			ev("turn/end", fmt.Sprintf(`{"turn":%d,"reason":%s}`, tn, turn.End), "")
		}
	}
	return l.b.String()
}

// SynthParallel writes a v4 session whose one turn, left open, has one
// finished step that called every tool of calls at once.
func SynthParallel(session string, calls []Call) string {
	l := newV4Log(session)
	l.event("turn/start", `{"turn":1}`, "")
	l.event("step/start", `{"turn":1,"step":1}`, "")
	content := make([]string, len(calls))
	for i, c := range calls {
		args, _ := json.Marshal(c.Args)
		content[i] = fmt.Sprintf(`{"type":"tool-call","id":"call_%d","name":%q,"arguments":%s}`, i, c.Tool, args)
	}
	l.event("assistant/message", `{"turn":1,"step":1,"message":{"id":"m1","role":"assistant","content":[`+strings.Join(content, ",")+
		`],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":10,"outputTokens":2},"stream":[]}`, `,"surfaceOp":"append"`)
	callSeq := make([]int, len(calls))
	for i, c := range calls {
		args, _ := json.Marshal(c.Args)
		callSeq[i] = l.seq
		l.event("tool/call", fmt.Sprintf(`{"turn":1,"step":1,"callId":"call_%d","name":%q,"arguments":%s}`, i, c.Tool, args), "")
	}
	for i, c := range calls {
		text, _ := json.Marshal(c.Result)
		l.event("tool/result", fmt.Sprintf(`{"turn":1,"step":1,"message":{"id":"r%d","role":"tool","toolCallId":"call_%d","content":[{"type":"text","text":%s}],"source":{"kind":"tool","callId":"call_%d"}}}`,
			i, i, text, i), fmt.Sprintf(`,"sourceEventSeqs":[%d],"surfaceOp":"append"`, callSeq[i]))
	}
	l.event("step/end", `{"turn":1,"step":1}`, "")
	return l.b.String()
}

// v4Log writes a synthetic v4 session: its header, then events 10 ms of
// log time apart, seq from 0.
type v4Log struct {
	b   strings.Builder
	seq int // the next event's
	tm  int64
}

func newV4Log(session string) *v4Log {
	l := &v4Log{tm: 1_800_000_000_000}
	fmt.Fprintf(&l.b, `{"type":"session","version":4,"id":%q,"createdAt":1,"isSeeded":false,"delegationDepth":0}`+"\n", session)
	return l
}

// event writes one event row: data is its data member's JSON, extra any
// members after it.
func (l *v4Log) event(typ, data, extra string) {
	fmt.Fprintf(&l.b, `{"type":%q,"seq":%d,"time":%d,"data":%s%s}`+"\n", typ, l.seq, l.tm, data, extra)
	l.seq++
	l.tm += 10
}
