package sessionlog

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// argsSeed seeds the hashes of advertised arguments (compared within one
// process only).
var argsSeed = maphash.MakeSeed()

// Validator checks the invariants of one session's log (docs/format.md §11):
// dense seqs, the turn/step state machine, tool calls resolved in their
// step, surface operations valid on the current surface. Feed it every row
// of the session in order; it keeps only the open state (the open turn and
// step, the step's calls, the surface's seqs), never the log.
//
// A turn still open at the end is not a violation: a live session's file
// ends that way. OpenTurn reports it.
type Validator struct {
	header *Header

	started  bool
	lastSeq  int64
	resync   bool // the previous row was undecodable: take the next seq as is
	joinedAt int64

	openTurn, openStep int64 // 0: none
	nextTurn, nextStep int64
	turnSeen           bool

	// Tool state of the open step.
	advertised []advertisedCall
	pending    turnmodel.Calls

	surface []int64

	// gaps are seq gaps inside the open step, held until an assistant/message
	// of the step cites every missing seq (an elided chunk run, as dsh's
	// snapshot writer leaves) or the step closes (then they are reported).
	gaps []seqGap

	taggedEndSeed bool
	noSurface     bool
}

type seqGap struct {
	line          int
	seq, from, to int64 // the event's seq; the missing seqs from..to
	prev          int64
}

// advertisedCall is a tool call an open step's assistant/message asked
// for. Its id and name are copies and its arguments only a hash: an event's
// strings are views into its row, and holding them would keep the whole
// assistant/message row alive while the step is open.
type advertisedCall struct {
	ID, Name          string
	args              uint64 // maphash of the arguments
	started, resolved bool
}

// NewValidator returns a Validator for one session.
func NewValidator() *Validator {
	return &Validator{lastSeq: -1, nextTurn: 1, nextStep: 1}
}

// TrackSurface turns surface tracking on (the default) or off. Off, the
// validator holds nothing that grows with the log — replace ranges are then
// not checked — which is what a long-running pipeline wants.
func (v *Validator) TrackSurface(on bool) { v.noSurface = !on }

// Event checks one event (in seq order) under format f and returns the
// relations it breaks. Row-level decoding problems are the caller's; Row
// reports both.
func (v *Validator) Event(e *Event, f Format) []Violation {
	return v.event(e, f, nil)
}

// OpenTurn is the turn still open after the rows fed so far (0: none).
func (v *Validator) OpenTurn() int64 { return v.openTurn }

// OpenStep is the step still open (0: none).
func (v *Validator) OpenStep() int64 { return v.openStep }

// Row checks one row under format f and returns its violations: the row's
// own decoding problems first, then broken relations, in event order.
func (v *Validator) Row(r *Row, f Format) []Violation {
	out := append([]Violation(nil), r.Problems...)
	switch r.Kind {
	case RowHeader:
		if v.header == nil {
			v.header = r.Header
		}
		return out
	case RowInvalid:
		v.resync = true
		return out
	case RowOther:
		return out
	}
	for i := range r.Events {
		out = v.event(&r.Events[i], f, out)
	}
	return out
}

// Finish checks what can only be judged at the end of the log and returns
// those violations.
func (v *Validator) Finish(f Format) []Violation {
	out := v.flushGaps(nil)
	if v.header != nil && f.FromHeader && f.Version >= 2 && v.header.HasIsSeeded {
		if v.header.IsSeeded && !v.taggedEndSeed {
			out = append(out, Violation{Line: 1, Seq: -1, Code: CodeSeededMismatch,
				Message: "header isSeeded is true but no session/end-seed with inherited:true exists"})
		}
		if !v.header.IsSeeded && v.taggedEndSeed {
			out = append(out, Violation{Line: 1, Seq: -1, Code: CodeSeededMismatch,
				Message: "header isSeeded is false but a session/end-seed with inherited:true exists"})
		}
	}
	return out
}

func (v *Validator) event(e *Event, f Format, out []Violation) []Violation {
	add := func(code, format string, args ...any) {
		out = append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: code, Message: fmt.Sprintf(format, args...)})
	}

	// seq density (docs/format.md §4, §11.2).
	switch {
	case !v.started:
		v.started = true
		v.joinedAt = e.Seq
		if f.FromHeader && e.Seq != 0 && !v.resync {
			add(CodeSeqNotZero, "the first event of a session file must have seq 0, got %d", e.Seq)
		}
	case e.Seq == v.lastSeq:
		add(CodeSeqDuplicate, "seq %d repeats the previous event's seq", e.Seq)
		return out
	case e.Seq < v.lastSeq:
		add(CodeSeqRegression, "seq %d goes back after seq %d", e.Seq, v.lastSeq)
		return out
	case e.Seq != v.lastSeq+1 && !v.resync:
		g := seqGap{line: e.Row.Line, seq: e.Seq, from: v.lastSeq + 1, to: e.Seq - 1, prev: v.lastSeq}
		if v.openStep != 0 && e.Type == "assistant/chunk" {
			v.gaps = append(v.gaps, g)
		} else {
			out = v.reportGap(g, out)
		}
	}
	v.lastSeq = e.Seq
	v.resync = false

	rules := f.RulesVersion()
	surface := IsSurfaceType(e.Type, rules)

	// Surface keys belong to surface types only (docs/format.md §4, §8.1).
	if (e.Surface.Kind != SurfaceNone || e.HasSources) && !surface && knownTypes[e.Type] {
		add(CodeSurfaceKeysLogged, "%s is a log-only event and may not carry surfaceOp or sourceEventSeqs", e.Type)
	}

	inStep := func() bool {
		if !e.HasTurn || !e.HasStep || e.Turn != v.openTurn || e.Step != v.openStep || v.openStep == 0 {
			add(CodeEventOutsideStep, "%s names turn %s step %s but the open step is %s", e.Type,
				optNum(e.HasTurn, e.Turn), optNum(e.HasStep, e.Step), v.stepName())
			return false
		}
		return true
	}

	switch e.Type {
	case "turn/start", "turn/end", "step/start", "step/end":
		out = v.flushGaps(out)
	}

	switch e.Type {
	case "turn/start":
		if !e.HasTurn {
			add(CodeEnvelopeInvalid, "turn/start needs an integer data.turn")
			break
		}
		if v.openTurn != 0 {
			add(CodeTurnAlreadyOpen, "turn/start %d while turn %d is still open", e.Turn, v.openTurn)
		}
		// A stream joined late (first seq > 0 without a header) may begin at any turn.
		lateJoin := !v.turnSeen && !f.FromHeader && v.joinedAt > 0
		if e.Turn != v.nextTurn && !lateJoin {
			add(CodeTurnNotNext, "turn/start %d, but the next turn number is %d", e.Turn, v.nextTurn)
		}
		v.turnSeen = true
		v.openTurn, v.openStep, v.nextStep = e.Turn, 0, 1
		v.resetStep()
	case "turn/end":
		if !e.HasTurn {
			add(CodeEnvelopeInvalid, "turn/end needs an integer data.turn")
			break
		}
		if v.openTurn == 0 || e.Turn != v.openTurn {
			add(CodeTurnEndNotOpen, "turn/end %d, but the open turn is %s", e.Turn, optNum(v.openTurn != 0, v.openTurn))
		}
		if v.openStep != 0 {
			add(CodeTurnEndStepOpen, "turn/end %d while step %d is still open (dsh closes every step first)", e.Turn, v.openStep)
			out = v.unresolved(e, out)
		}
		v.openTurn, v.openStep = 0, 0
		v.nextTurn = e.Turn + 1
		v.turnSeen = true
		v.resetStep()
	case "step/start":
		if !e.HasTurn || !e.HasStep {
			add(CodeEnvelopeInvalid, "step/start needs integer data.turn and data.step")
			break
		}
		switch {
		case v.openTurn == 0:
			add(CodeStepOutsideTurn, "step/start %d.%d outside any turn", e.Turn, e.Step)
		case e.Turn != v.openTurn:
			add(CodeStepOutsideTurn, "step/start %d.%d names turn %d but turn %d is open", e.Turn, e.Step, e.Turn, v.openTurn)
		case v.openStep != 0:
			add(CodeStepAlreadyOpen, "step/start %d.%d while step %d is still open", e.Turn, e.Step, v.openStep)
		case e.Step != v.nextStep:
			add(CodeStepNotNext, "step/start %d.%d, but the next step number is %d", e.Turn, e.Step, v.nextStep)
		}
		v.openStep = e.Step
		v.resetStep()
	case "step/end":
		if !e.HasTurn || !e.HasStep {
			add(CodeEnvelopeInvalid, "step/end needs integer data.turn and data.step")
			break
		}
		if v.openStep == 0 || e.Turn != v.openTurn || e.Step != v.openStep {
			add(CodeStepEndNotOpen, "step/end %d.%d, but the open step is %s", e.Turn, e.Step, v.stepName())
		} else {
			out = v.unresolved(e, out)
		}
		v.openStep = 0
		v.nextStep = e.Step + 1
		v.resetStep()
	case "assistant/chunk":
		// A chunk of a turn that was never opened, with no turn open, is a
		// detached model stream: dsh's replay scripts and provider seeds
		// are logs of nothing but these. It belongs to no step.
		detached := v.openTurn == 0 && e.HasTurn && e.Turn >= v.nextTurn
		if !detached {
			inStep()
		}
	case "assistant/attempt", "llm/retry": // docs/format.md §11.3: a retry sits inside the open step
		inStep()
	case "assistant/message":
		v.citeGaps(e)
		if inStep() {
			for _, c := range e.Advertised {
				v.advertised = append(v.advertised, advertisedCall{ID: strings.Clone(c.ID), Name: strings.Clone(c.Name),
					args: maphash.String(argsSeed, c.Arguments)})
			}
		}
		if rules >= 3 && e.HasSources {
			add(CodeSourcesForbidden, "a v%d assistant/message may not carry sourceEventSeqs (its stream is the evidence)", rules)
		}
	case "system/message", "developer/message":
		if surface {
			inStep()
		}
	case "tool/call":
		if inStep() {
			out = v.toolCall(e, f, out)
		}
	case "tool/result":
		if rules >= 4 && e.HasErrorDetail && !e.IsError {
			add(CodeErrorWithoutIsError, "a v4 tool/result may carry error only with isError: true")
		}
		if e.Surface.Kind == SurfaceReplace {
			if v.openTurn == 0 {
				add(CodeEventOutsideTurn, "a replacing tool/result needs an open turn")
			}
		} else if inStep() {
			out = v.toolResult(e, f, out)
		}
	case "request/header":
		if rules >= 3 && e.HasSystem {
			add(CodeSystemForbidden, "a v%d request/header may not carry header.system (the system prompt is a system/message)", rules)
		}
	case "todo/write":
		if v.openTurn == 0 {
			add(CodeEventOutsideTurn, "%s needs an open turn", e.Type)
		}
	case "session/end-seed":
		if e.Inherited {
			v.taggedEndSeed = true
		}
	}

	if surface && !v.noSurface {
		out = v.surfaceOp(e, out)
	} else if surface && e.Surface.Kind == SurfaceNone {
		out = append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: CodeSurfaceOpMissing,
			Message: fmt.Sprintf("%s is a surface event and must carry surfaceOp", e.Type)})
	}
	return out
}

func optNum(ok bool, n int64) string {
	if !ok {
		return "none"
	}
	return fmt.Sprint(n)
}

func (v *Validator) stepName() string {
	if v.openStep == 0 {
		if v.openTurn == 0 {
			return "none (no open turn)"
		}
		return fmt.Sprintf("none (turn %d open)", v.openTurn)
	}
	return fmt.Sprintf("%d.%d", v.openTurn, v.openStep)
}

func (v *Validator) resetStep() {
	v.advertised = v.advertised[:0]
	v.pending.Reset()
}

func (v *Validator) reportGap(g seqGap, out []Violation) []Violation {
	return append(out, Violation{Line: g.line, Seq: g.seq, Code: CodeSeqGap,
		Message: fmt.Sprintf("seq %d follows seq %d: seqs %d–%d are missing", g.seq, g.prev, g.from, g.to)})
}

// citeGaps drops the held gaps whose every seq the message cites as its chunks.
func (v *Validator) citeGaps(e *Event) {
	if len(v.gaps) == 0 || !e.HasSources || !slices.IsSorted(e.Sources) {
		return
	}
	v.gaps = slices.DeleteFunc(v.gaps, func(g seqGap) bool {
		i, found := slices.BinarySearch(e.Sources, g.from)
		if !found {
			return false
		}
		// Sources are unique and sorted: from..to are all cited when the
		// entry to-from places on is to.
		return int64(len(e.Sources)-i) > g.to-g.from && e.Sources[i+int(g.to-g.from)] == g.to
	})
}

// citer answers "is seq cited?" in O(log n) for sorted sources, else
// through a set built once.
func citer(sources []int64) func(int64) bool {
	if slices.IsSorted(sources) {
		return func(s int64) bool { _, ok := slices.BinarySearch(sources, s); return ok }
	}
	set := make(map[int64]struct{}, len(sources))
	for _, s := range sources {
		set[s] = struct{}{}
	}
	return func(s int64) bool { _, ok := set[s]; return ok }
}

// flushGaps reports the gaps no message explained.
func (v *Validator) flushGaps(out []Violation) []Violation {
	for _, g := range v.gaps {
		out = v.reportGap(g, out)
	}
	v.gaps = v.gaps[:0]
	return out
}

// unresolved reports advertised calls of the closing step with no result (docs/format.md §11.3).
func (v *Validator) unresolved(e *Event, out []Violation) []Violation {
	for _, c := range v.advertised {
		if !c.resolved {
			out = append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: CodeToolCallUnresolved,
				Message: fmt.Sprintf("%s closes step %s while call %q (%s) has no tool/result", e.Type, v.stepName(), c.ID, c.Name)})
		}
	}
	return out
}

func (v *Validator) toolCall(e *Event, f Format, out []Violation) []Violation {
	add := func(code, format string, args ...any) {
		out = append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: code, Message: fmt.Sprintf(format, args...)})
	}
	if v.pending.Has(e.CallID) {
		add(CodeToolCallDuplicate, "tool/call %q is already started in this step", e.CallID)
		return out
	}
	idx := slices.IndexFunc(v.advertised, func(c advertisedCall) bool { return c.ID == e.CallID && !c.started })
	switch {
	case idx < 0:
		add(CodeToolCallNotAdvertised, "tool/call %q (%s) matches no tool-call block of this step's assistant/message", e.CallID, e.ToolName)
	case v.advertised[idx].Name != e.ToolName:
		add(CodeToolCallNotAdvertised, "tool/call %q names tool %q but the assistant message advertised %q", e.CallID, e.ToolName, v.advertised[idx].Name)
	case !f.Seed && v.advertised[idx].args != maphash.String(argsSeed, e.Arguments):
		// The seed dialect's tool_use carries an object, re-encoded here, so
		// only real dsh arguments are compared byte for byte.
		add(CodeToolCallNotAdvertised, "tool/call %q arguments differ from the advertised call's", e.CallID)
	}
	if idx >= 0 {
		v.advertised[idx].started = true
	}
	v.pending.Add(e.CallID, e.ToolName, e.Seq, v.openStep)
	return out
}

// toolResult closes the call a result answers, by the turn model's
// pairing rules (turnmodel.Calls).
func (v *Validator) toolResult(e *Event, f Format, out []Violation) []Violation {
	callID := e.CallID
	if call, ok := v.pending.Resolve(e.ToolResult(f, v.openStep)); ok {
		callID = call.ID
	} else {
		// A call that never started may only be closed by crash repair's
		// TOOL_NOT_STARTED result (docs/format.md §11.3, §11.4).
		notStarted := e.SyntheticResult && e.ErrorCode == "TOOL_NOT_STARTED" &&
			slices.ContainsFunc(v.advertised, func(c advertisedCall) bool { return c.ID == e.CallID && !c.started })
		if !notStarted {
			out = append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: CodeToolResultNoCall,
				Message: fmt.Sprintf("tool/result for call %q closes no started tool/call of step %s", e.CallID, v.stepName())})
			return out
		}
	}
	for k := range v.advertised {
		if v.advertised[k].ID == callID && !v.advertised[k].resolved {
			v.advertised[k].resolved = true
			break
		}
	}
	return out
}

// surfaceOp folds a surface event into the surface (docs/format.md §8.2) and checks it.
func (v *Validator) surfaceOp(e *Event, out []Violation) []Violation {
	switch e.Surface.Kind {
	case SurfaceNone:
		out = append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: CodeSurfaceOpMissing,
			Message: fmt.Sprintf("%s is a surface event and must carry surfaceOp", e.Type)})
	case SurfaceAppend:
		if v.surface == nil { // room for most logs' surfaces at once
			v.surface = make([]int64, 0, 32)
		}
		v.surface = append(v.surface, e.Seq)
	case SurfaceReplace:
		next, code, msg := ApplyReplace(v.surface, e)
		if code != "" {
			out = append(out, Violation{Line: e.Row.Line, Seq: e.Seq, Code: code, Message: msg})
		}
		v.surface = next
	}
	return out
}

// ApplyReplace applies a replace surfaceOp to surface (docs/format.md §8.2) and returns the
// new surface, built in surface's memory (the caller's slice is
// overwritten). When the range is not on the surface it returns the surface
// unchanged with the violation code and message; a range whose nodes are not
// all cited is applied and reported.
func ApplyReplace(surface []int64, e *Event) (next []int64, code, msg string) {
	a, b := e.Surface.Start, e.Surface.End
	i := slices.Index(surface, a)
	j := slices.Index(surface, b)
	switch {
	case i < 0:
		return surface, CodeReplaceNotOnSurface, fmt.Sprintf("replace range start %d is not a node of the current surface", a)
	case j < 0:
		return surface, CodeReplaceNotOnSurface, fmt.Sprintf("replace range end %d is not a node of the current surface", b)
	case j < i:
		return surface, CodeReplaceInverted, fmt.Sprintf("replace range %d–%d ends before it starts in surface order", a, b)
	}
	cited := citer(e.Sources)
	for _, s := range surface[i : j+1] {
		if !cited(s) {
			code, msg = CodeReplaceNotCited, fmt.Sprintf("replace shadows surface node %d, which sourceEventSeqs does not cite", s)
			break
		}
	}
	// In place: the range's first node becomes the replacing event and the
	// nodes after the range move up over the rest of it.
	surface[i] = e.Seq
	next = append(surface[:i+1], surface[j+1:]...)
	return next, code, msg
}
