package turnmodel

import "testing"

func TestCallsRules(t *testing.T) {
	newCalls := func() *Calls {
		var c Calls
		c.Add("a", "bash", 10, 1) // an older step's call, left without a result
		c.Add("b", "bash", 20, 2)
		c.Add("c", "grep", 21, 2)
		c.Add("d", "bash", 22, 2)
		return &c
	}
	for _, tc := range []struct {
		name string
		r    Result
		want string // "" for none
	}{
		{"call id", Result{CallID: "d", Step: 2}, "d"},
		{"call id of another step", Result{CallID: "a", Step: 2}, ""},
		{"unknown call id, no guess", Result{CallID: "zz", ToolName: "bash", Step: 2}, ""},
		{"citation", Result{Cites: 22, HasCites: true, ToolName: "bash", Step: 2}, "d"},
		{"citation of another step's call", Result{Cites: 10, HasCites: true, Step: 2}, ""},
		{"citation misses, name decides", Result{Cites: 5, HasCites: true, ToolName: "grep", Step: 2}, "c"},
		{"name: oldest of the step", Result{ToolName: "bash", Step: 2}, "b"},
		{"name of no pending call", Result{ToolName: "ls", Step: 2}, ""},
		{"no evidence: oldest of the step", Result{Step: 2}, "b"},
		{"no evidence, seed dialect", Result{Step: 2, Seed: true}, ""},
		{"citation misses, no name", Result{Cites: 5, HasCites: true, Step: 2}, ""},
		{"nothing pending in the step", Result{Step: 3}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalls()
			got, ok := c.Resolve(tc.r)
			switch {
			case tc.want == "" && ok:
				t.Errorf("paired with %q, want none", got.ID)
			case tc.want != "" && (!ok || got.ID != tc.want):
				t.Errorf("paired with %q (%v), want %q", got.ID, ok, tc.want)
			case ok && c.Len() != 3:
				t.Errorf("%d pending after a pairing, want 3", c.Len())
			case !ok && c.Len() != 4:
				t.Errorf("%d pending after no pairing, want 4", c.Len())
			}
		})
	}
}

func TestCursorAttempts(t *testing.T) {
	c := NewCursor("s")
	ev := func(typ string, seq int64, mod func(*Event)) Place {
		e := Event{Type: typ, Seq: seq, Turn: 1, HasTurn: true, Step: 1, HasStep: true}
		if mod != nil {
			mod(&e)
		}
		return c.Advance(&e)
	}
	ev("turn/start", 0, nil)
	ev("step/start", 1, nil)
	// A v0 chunk run, finished, then a retry's run, then the message that
	// cites the first run's chunks: it commits attempt 1.
	if p := ev("assistant/chunk", 2, nil); p.Attempt != 1 || !p.NewAttempt {
		t.Fatalf("first chunk %+v", p)
	}
	ev("assistant/chunk", 3, func(e *Event) { e.Finish = true })
	if p := ev("assistant/chunk", 4, nil); p.Attempt != 2 || !p.NewAttempt {
		t.Fatalf("retry chunk %+v", p)
	}
	ev("assistant/chunk", 5, func(e *Event) { e.Finish = true })
	if p := ev("assistant/message", 6, func(e *Event) { e.Sources = []int64{2, 3} }); p.Attempt != 1 || p.NewAttempt {
		t.Fatalf("message citing attempt 1: %+v", p)
	}
	// A second message with nothing to commit is an attempt of its own.
	if p := ev("assistant/message", 7, nil); p.Attempt != 3 || !p.NewAttempt {
		t.Fatalf("second message %+v", p)
	}
	// A v2+ message with its own stream is always a new attempt.
	if p := ev("assistant/message", 8, func(e *Event) { e.Streamed = true }); p.Attempt != 4 || !p.NewAttempt {
		t.Fatalf("streamed message %+v", p)
	}
	// A model event naming another step is an orphan; of a closed turn, late.
	if p := ev("assistant/chunk", 9, func(e *Event) { e.Step = 2 }); p.Stray != Orphan || p.Kind != KindNone {
		t.Fatalf("chunk of step 2: %+v", p)
	}
	ev("step/end", 10, nil)
	ev("turn/end", 11, nil)
	if p := ev("tool/result", 12, nil); p.Stray != Late {
		t.Fatalf("result after the turn: %+v", p)
	}
	// State round trip.
	d := FromState(c.State())
	if d.LastClosed() != 1 || d.OpenTurn() != 0 || d.Session() != "s" {
		t.Fatalf("restored %+v", d.State())
	}
}
