package sessionlog

import "github.com/dshtrace/dshtrace/sessionlog/turnmodel"

// TurnModel is what the turn model reads of the event, decoded under format f:
// the fields that say which turn, step, attempt and call it belongs to.
func (e *Event) TurnModel(f Format) turnmodel.Event {
	return turnmodel.Event{
		Type: e.Type, Seq: e.Seq,
		Turn: e.Turn, Step: e.Step, HasTurn: e.HasTurn, HasStep: e.HasStep,
		CallID: e.CallID, SubCallID: e.SubCallID, ToolName: e.ToolName,
		Sources:  e.Sources,
		Finish:   e.Chunk != nil && e.Chunk.Type == "finish",
		Streamed: e.Stream != nil,
		Replace:  e.Surface.Kind == SurfaceReplace,
		Seed:     f.Seed,
	}
}

// ToolResult is what the turn model's pairing rules read of a tool/result in
// step (the step it is in), decoded under format f.
func (e *Event) ToolResult(f Format, step int64) turnmodel.Result {
	r := turnmodel.Result{CallID: e.CallID, ToolName: e.ToolName, Step: step, Seed: f.Seed}
	if len(e.Sources) > 0 {
		r.Cites, r.HasCites = e.Sources[0], true
	}
	return r
}
