package sessionlog

import (
	"fmt"
	"slices"
)

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
