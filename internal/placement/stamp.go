package placement

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

// Stamp puts on lr the ids of the span its event was placed in (pl, a
// place of session s) and the span's placement attributes (AttrCount of
// them): dsh.turn always; dsh.step unless the span is the turn's own;
// gen_ai.tool.call.id on a tool span (a nested dispatch's own sub-call
// id); dsh.tool.parent_call_id on a dispatch's span. These are the
// values of the span's own attributes. A place in no span
// (turnmodel.Place.Spanned) stamps nothing; Stamp reports whether it
// stamped.
func (s *Session) Stamp(lr plog.LogRecord, pl turnmodel.Place) bool {
	if !pl.Spanned() {
		return false
	}
	trace, span := s.ids.of(pl)
	lr.SetTraceID(trace)
	lr.SetSpanID(span)
	a := lr.Attributes()
	a.PutInt(semconv.DshTurn, pl.Turn)
	if pl.Kind != turnmodel.KindTurn {
		a.PutInt(semconv.DshStep, pl.Step)
	}
	if pl.Kind == turnmodel.KindTool {
		if pl.SubCallID != "" {
			a.PutStr(semconv.GenAIToolCallID, pl.SubCallID)
			a.PutStr(semconv.DshToolParentCallID, pl.CallID)
		} else {
			a.PutStr(semconv.GenAIToolCallID, pl.CallID)
		}
	}
	return true
}

// AttrCount is the number of attributes Stamp puts for pl, so a record
// builder can size its attribute map once.
func AttrCount(pl turnmodel.Place) int {
	switch {
	case !pl.Spanned():
		return 0
	case pl.Kind == turnmodel.KindTurn:
		return 1
	case pl.Kind == turnmodel.KindTool && pl.SubCallID != "":
		return 4
	case pl.Kind == turnmodel.KindTool:
		return 3
	}
	return 2
}

// idCache holds the ids last computed for a session: consecutive records
// mostly share their turn's trace and often their span, and each id is a
// SHA-256.
type idCache struct {
	valid bool
	key   turnmodel.Place
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// of are the trace and span ids of the span pl names (pl is spanned).
func (c *idCache) of(pl turnmodel.Place) (pcommon.TraceID, pcommon.SpanID) {
	key := turnmodel.Place{Kind: pl.Kind, Session: pl.Session, Turn: pl.Turn, Step: pl.Step,
		Attempt: pl.Attempt, CallID: pl.CallID, SubCallID: pl.SubCallID}
	if c.valid && c.key == key {
		return c.trace, c.span
	}
	// The trace id is the session's and turn's: hashed again only when
	// one of them changes.
	if !c.valid || c.key.Session != key.Session || c.key.Turn != key.Turn {
		tr, sp := pl.IDs()
		c.trace, c.span = pcommon.TraceID(tr), pcommon.SpanID(sp)
	} else {
		c.span = pcommon.SpanID(pl.SpanID())
	}
	// Kept past the record: copies, not views into it (the session's copy
	// kept while it stays the same).
	if !c.valid || c.key.Session != key.Session {
		key.Session = strings.Clone(key.Session)
	} else {
		key.Session = c.key.Session
	}
	key.CallID, key.SubCallID = strings.Clone(key.CallID), strings.Clone(key.SubCallID)
	c.key, c.valid = key, true
	return c.trace, c.span
}
