package sessionlog

import (
	"fmt"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

func (d *RowDecoder) decodeSurfaceOp(r *Row, e *Event, op jsontape.Value) {
	if op.Type() == jsontape.String {
		if op.GetString() == "append" {
			e.Surface.Kind = SurfaceAppend
			return
		}
		e.Surface.Kind = SurfaceInvalid
		r.problem(e.Seq, CodeSurfaceOpInvalid, fmt.Sprintf("unknown surfaceOp %s", op.Raw()))
		return
	}
	if op.Type() == jsontape.Object && op.GetString("op") == "replace" {
		members := op.ObjectLen()
		a, okA := op.Get("startSeq").SafeInt()
		b, okB := op.Get("endSeq").SafeInt()
		if okA && okB && members == 3 {
			e.Surface = SurfaceOp{Kind: SurfaceReplace, Start: a, End: b, SeqKeys: true}
			d.evidence(3, false)
			return
		}
		a, okA = op.Get("start").SafeInt()
		b, okB = op.Get("end").SafeInt()
		if okA && okB && members == 3 {
			e.Surface = SurfaceOp{Kind: SurfaceReplace, Start: a, End: b}
			return
		}
	}
	e.Surface.Kind = SurfaceInvalid
	r.problem(e.Seq, CodeSurfaceOpInvalid, fmt.Sprintf("surfaceOp %s is neither \"append\" nor {op:\"replace\", start/end or startSeq/endSeq}", op.Raw()))
}
