package placement

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/dshtrace/dshtrace/internal/semconv"
	"github.com/dshtrace/dshtrace/sessionlog"
	"github.com/dshtrace/dshtrace/sessionlog/turnmodel"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func turnStart(seq, turn int64) *sessionlog.Event {
	return &sessionlog.Event{Type: "turn/start", Seq: seq, Turn: turn, HasTurn: true}
}

func stepStart(seq, turn, step int64) *sessionlog.Event {
	return &sessionlog.Event{Type: "step/start", Seq: seq, Turn: turn, Step: step, HasTurn: true, HasStep: true}
}

// place gives session id one event at arrival time now.
func place(tb *Table, id string, now time.Time, e *sessionlog.Event) turnmodel.Place {
	if e.Detail == nil {
		e.Detail = &sessionlog.Detail{}
	}
	s, _ := tb.Session(id, now)
	return tb.Advance(s, e, sessionlog.Format{})
}

// The bounds default to the turn model's; a bound given is kept.
func TestNewBounds(t *testing.T) {
	assert.Equal(t, turnmodel.DefaultBounds(), New(turnmodel.Bounds{}).Bounds())
	b := turnmodel.Bounds{MaxSessions: 3, MaxOpenTurns: 2, DanglingTimeout: time.Minute}
	assert.Equal(t, b, New(b).Bounds())
}

// At MaxSessions the least recently active session is forgotten, its open
// turn closed and no longer counted against MaxOpenTurns.
func TestEvictionForgetsLeastRecentlyActive(t *testing.T) {
	tb := New(turnmodel.Bounds{MaxSessions: 2, MaxOpenTurns: 2})
	place(tb, "a", t0, turnStart(0, 1))
	place(tb, "b", t0, turnStart(0, 1))
	place(tb, "a", t0, stepStart(1, 1, 1)) // a is the most recent
	s, evicted := tb.Session("c", t0)
	assert.True(t, evicted)
	assert.Nil(t, tb.Save("b"), "b was the least recently active")
	assert.NotNil(t, tb.Save("a"))
	assert.Equal(t, 1, tb.open.Len(), "b's open turn left the count")
	e := turnStart(0, 1)
	e.Detail = &sessionlog.Detail{}
	pl := tb.Advance(s, e, sessionlog.Format{})
	assert.True(t, pl.Spanned())
	assert.Equal(t, 2, tb.open.Len())
}

// At MaxOpenTurns the turn open longest is closed: its later events are
// late and placed in no span.
func TestMaxOpenTurnsClosesTheOldest(t *testing.T) {
	tb := New(turnmodel.Bounds{MaxOpenTurns: 1})
	place(tb, "a", t0, turnStart(0, 1))
	place(tb, "b", t0, turnStart(0, 1))
	assert.False(t, place(tb, "a", t0, stepStart(1, 1, 1)).Spanned(), "a's turn was closed")
	assert.True(t, place(tb, "b", t0, stepStart(1, 1, 1)).Spanned())
	assert.Equal(t, 1, tb.open.Len())
}

// A session silent for DanglingTimeout has its turn closed at its next
// arrival; a zero arrival (a replay) neither measures nor resets silence.
func TestDanglingTimeout(t *testing.T) {
	tb := New(turnmodel.Bounds{DanglingTimeout: time.Minute})
	place(tb, "a", t0, turnStart(0, 1))
	assert.True(t, place(tb, "a", time.Time{}, stepStart(1, 1, 1)).Spanned(), "a replay is no arrival")
	assert.True(t, place(tb, "a", t0.Add(59*time.Second), &sessionlog.Event{Type: "step/end", Seq: 2, Turn: 1, Step: 1, HasTurn: true, HasStep: true}).Spanned())
	late := place(tb, "a", t0.Add(2*time.Minute), &sessionlog.Event{Type: "turn/end", Seq: 3, Turn: 1, HasTurn: true})
	assert.False(t, late.Spanned(), "after the silence the turn was closed")
	assert.Equal(t, 0, tb.open.Len())
}

// Restore puts a saved cursor back, its open turn counted again; nil
// forgets the session.
func TestSaveRestore(t *testing.T) {
	tb := New(turnmodel.Bounds{})
	place(tb, "a", t0, turnStart(0, 1))
	saved := tb.Save("a")
	require.NotNil(t, saved)
	place(tb, "a", t0, &sessionlog.Event{Type: "turn/end", Seq: 1, Turn: 1, HasTurn: true})
	assert.Equal(t, 0, tb.open.Len())
	tb.Restore("a", saved)
	assert.Equal(t, 1, tb.open.Len(), "the restored open turn counts")
	s, _ := tb.Session("a", t0)
	_, placed := s.LastSeq()
	assert.False(t, placed, "the last seq is unknown after a restore")
	assert.True(t, place(tb, "a", t0, stepStart(1, 1, 1)).Spanned())
	tb.Restore("a", nil)
	assert.Nil(t, tb.Save("a"))
	assert.Equal(t, 0, tb.open.Len())
	assert.Equal(t, 0, tb.Len())
}

// Stamp puts the span's ids and its own placement attributes, and nothing
// on a record placed in no span.
func TestStamp(t *testing.T) {
	tb := New(turnmodel.Bounds{})
	s, _ := tb.Session("s", t0)
	cases := []struct {
		name  string
		pl    turnmodel.Place
		span  turnmodel.SpanID
		attrs map[string]any
	}{
		{"turn", turnmodel.Place{Kind: turnmodel.KindTurn, Session: "s", Turn: 2},
			turnmodel.TurnSpanID("s", 2), map[string]any{semconv.DshTurn: int64(2)}},
		{"step", turnmodel.Place{Kind: turnmodel.KindStep, Session: "s", Turn: 2, Step: 3},
			turnmodel.StepSpanID("s", 2, 3), map[string]any{semconv.DshTurn: int64(2), semconv.DshStep: int64(3)}},
		{"chat", turnmodel.Place{Kind: turnmodel.KindChat, Session: "s", Turn: 2, Step: 3, Attempt: 1},
			turnmodel.ChatSpanID("s", 2, 3, 1), map[string]any{semconv.DshTurn: int64(2), semconv.DshStep: int64(3)}},
		{"tool", turnmodel.Place{Kind: turnmodel.KindTool, Session: "s", Turn: 2, Step: 3, CallID: "c1"},
			turnmodel.ToolSpanID("s", 2, 3, "c1", ""), map[string]any{semconv.DshTurn: int64(2), semconv.DshStep: int64(3), semconv.GenAIToolCallID: "c1"}},
		{"dispatch", turnmodel.Place{Kind: turnmodel.KindTool, Session: "s", Turn: 2, Step: 3, CallID: "c1", SubCallID: "d1"},
			turnmodel.ToolSpanID("s", 2, 3, "c1", "d1"), map[string]any{semconv.DshTurn: int64(2), semconv.DshStep: int64(3),
				semconv.GenAIToolCallID: "d1", semconv.DshToolParentCallID: "c1"}},
		{"none", turnmodel.Place{Kind: turnmodel.KindNone, Session: "s"}, turnmodel.SpanID{}, map[string]any{}},
		{"no span", turnmodel.Place{Kind: turnmodel.KindStep, Session: "s", Turn: 1, Step: 1, NoSpan: true}, turnmodel.SpanID{}, map[string]any{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lr := plog.NewLogRecord()
			assert.Equal(t, len(c.attrs) > 0, s.Stamp(lr, c.pl))
			assert.Equal(t, c.attrs, lr.Attributes().AsRaw())
			assert.Equal(t, len(c.attrs), AttrCount(c.pl))
			assert.Equal(t, pcommon.SpanID(c.span), lr.SpanID())
			if len(c.attrs) > 0 {
				assert.Equal(t, pcommon.TraceID(turnmodel.TraceIDOf("s", c.pl.Turn)), lr.TraceID())
			} else {
				assert.True(t, lr.TraceID().IsEmpty())
			}
		})
	}
}
