package sessionlog

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

func deriveFile(t *testing.T, path string, before *StepRef) History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := Derive(f, Options{}, before)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return h
}

func historyJSON(t *testing.T, h History) string {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The seed sample derives as docs/format.md §12 describes: the prompt, the
// assistant message, and the tool result as a user-role tool-result block
// naming call_1, which the result itself never names.
func TestDeriveSeedSample(t *testing.T) {
	h := deriveFile(t, "../testdata/seed/sample.jsonl", nil)
	want := `[{"seq":2,"role":"user","content":[{"type":"text","text":"Fix the typo in the runoob README."}]},` +
		`{"seq":5,"role":"assistant","content":[{"type":"text","text":"I'll search"},{"type":"tool_use","id":"call_1","name":"bash","input":{"command":"grep runoob README.md"}}]},` +
		`{"seq":7,"role":"user","content":[{"type":"tool-result","toolCallId":"call_1","content":[{"type":"text","text":"runoob"}],"isError":false}]}]`
	if got := historyJSON(t, h); got != want {
		t.Fatalf("history\n got %s\nwant %s", got, want)
	}
	before := deriveFile(t, "../testdata/seed/sample.jsonl", &StepRef{1, 1})
	if before.Len() != 1 || before.At(0).Seq() != 2 || before.At(0).Role() != "user" {
		t.Fatalf("before step 1.1: %s", historyJSON(t, before))
	}
}

func TestDeriveStepNotFound(t *testing.T) {
	f, err := os.Open("../testdata/seed/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Derive(f, Options{}, &StepRef{2, 1}); !errors.Is(err, ErrStepNotFound) {
		t.Fatalf("got %v, want ErrStepNotFound", err)
	}
}

func TestDeriveCorpus(t *testing.T) {
	dir := testcorpus.Dir(t)
	cases := []struct {
		file string
		// roles and seqs of the derived history, "role@seq" joined by spaces.
		want string
	}{
		// v0: user-role tool results; the runtime-context user message.
		{"v0/examples/acp-agent/tests/snapshots/parallel-tool-calls/session.jsonl",
			"user@4 user@5 assistant@17 user@20 user@21 assistant@29"},
		// v0 replace {start,end}: the compaction summary (seq 21) replaces the prompt (seq 4).
		{"v0/examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl",
			"user@21 assistant@13 user@15 assistant@28"},
		// v4: a system prompt replaced in place (startSeq/endSeq), tool-role results, a developer message.
		{"v4/snapshots/sdk/tool-error-details/session.v4.jsonl",
			"system@18 user@8 user@9 assistant@13 tool@15 developer@20 assistant@21 tool@25 assistant@28"},
		// v4, two turns (the first ends max-tokens).
		{"v4/snapshots/sdk/max-tokens-continue/session.v4.jsonl",
			"system@7 user@8 user@9 assistant@13 user@20 assistant@21"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			h := deriveFile(t, filepath.Join(dir, c.file), nil)
			var got []string
			for _, m := range h.All() {
				got = append(got, m.Role()+"@"+itoa(m.Seq()))
			}
			if strings.Join(got, " ") != c.want {
				t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), c.want)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// Every log (ours and the corpus's) derives, at the end and before each of
// its steps, and what comes out is valid JSON content.
func TestDeriveWholeCorpus(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		rel := l.Name
		h := deriveFile(t, l.Path, nil)
		for _, m := range h.All() {
			if !json.Valid([]byte(m.Content())) || !strings.HasPrefix(m.Content(), "[") {
				t.Errorf("%s seq %d: content is not a JSON array: %.80s", rel, m.Seq(), m.Content())
			}
		}
	}
}

// A History handed out earlier does not change when the session goes on,
// and nothing a caller does to its copy reaches the Deriver.
func TestDeriveHistoryIsImmutable(t *testing.T) {
	f, err := os.Open("../testdata/seed/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := NewDecoder(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDeriver()
	var early History
	for {
		row, err := dec.Next()
		if err != nil {
			break
		}
		for i := range row.Events {
			d.Event(&row.Events[i], dec.Format())
			if row.Events[i].Seq == 2 {
				early = d.History()
			}
		}
	}
	if early.Len() != 1 {
		t.Fatalf("early history has %d messages, want 1", early.Len())
	}
	full := d.History()
	if full.Len() != 3 {
		t.Fatalf("full history has %d messages, want 3", full.Len())
	}
	m := full.At(0)
	_ = m // Message has no exported fields or setters: a copy is all a caller holds.
	if d.History().At(0).Content() != full.At(0).Content() {
		t.Fatal("history changed between calls")
	}
}

// An empty assistant message (a max-tokens stop) keeps its usage in the log
// but shows the model nothing (docs/format.md §8.4).
func TestDeriveSkipsEmptyAssistant(t *testing.T) {
	log := `{"type":"session","version":4,"id":"s-empty","createdAt":1,"isSeeded":false,"delegationDepth":0}
{"type":"turn/start","seq":0,"time":2,"data":{"turn":1}}
{"type":"step/start","seq":1,"time":3,"data":{"turn":1,"step":1}}
{"type":"user/message","seq":2,"time":4,"data":{"id":"m1","role":"user","content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}},"surfaceOp":"append"}
{"type":"assistant/message","seq":3,"time":5,"data":{"turn":1,"step":1,"message":{"id":"m2","role":"assistant","content":[],"source":{"kind":"model","provider":"p","model":"m"}},"usage":{"inputTokens":5,"outputTokens":100},"stream":[{"type":"chunk","time":5,"chunk":{"type":"finish","reason":{"kind":"max-tokens"}}}]},"surfaceOp":"append"}
{"type":"step/end","seq":4,"time":6,"data":{"turn":1,"step":1}}
{"type":"turn/end","seq":5,"time":7,"data":{"turn":1,"reason":{"kind":"max-tokens"}}}
`
	h, err := Derive(strings.NewReader(log), Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := historyJSON(t, h); got != `[{"seq":2,"role":"user","content":[{"type":"text","text":"hi"}]}]` {
		t.Fatalf("got %s", got)
	}
}

// TestDeriverOwnsItsStrings: what a Deriver keeps is its own, not a view
// into the rows it was fed — a kept view would hold the row's memory (for
// the file transport, the whole chunk the row was read into) for the
// session's life. Each file's rows are decoded out of one buffer, which is
// overwritten once the history is taken: the history must not change.
func TestDeriverOwnsItsStrings(t *testing.T) {
	for _, name := range []string{"v4-tools.jsonl", "v0-packed.jsonl", "v3-system.jsonl", "v2-stream.jsonl"} {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "testdata", "dialects", name))
			if err != nil {
				t.Fatal(err)
			}
			buf := append([]byte(nil), raw...)
			dec := NewRowDecoder(0, 0)
			d := NewDeriver()
			line := 0
			for off := 0; off < len(buf); {
				end := off + strings.IndexByte(string(buf[off:]), '\n')
				if end < off {
					end = len(buf)
				}
				line++
				row, err := dec.Decode(buf[off:end:end], line)
				if err != nil {
					t.Fatal(err)
				}
				for i := range row.Events {
					d.Event(&row.Events[i], dec.Format())
				}
				off = end + 1
			}
			before := historyJSON(t, d.History())
			if d.History().Len() == 0 {
				t.Fatal("no history derived")
			}
			for i := range buf {
				buf[i] = 'x'
			}
			if after := historyJSON(t, d.History()); after != before {
				t.Fatalf("history changed when the rows' memory was overwritten:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestDeriverLast: after every event of every repository log, Last is the
// last message of History (an empty assistant message projects nothing and
// leaves Last where it was).
func TestDeriverLast(t *testing.T) {
	files, err := filepath.Glob("../testdata/*/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no logs: %v", err)
	}
	checked := 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := NewDecoder(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := NewDeriver()
		if _, ok := d.Last(); ok {
			t.Fatal("an empty Deriver has a last message")
		}
		for {
			row, err := dec.Next()
			if err != nil {
				break
			}
			for i := range row.Events {
				d.Event(&row.Events[i], dec.Format())
				h := d.History()
				last, ok := d.Last()
				switch {
				case h.Len() == 0 && ok:
					t.Errorf("%s seq %d: Last is seq %d of an empty history", path, row.Events[i].Seq, last.Seq())
				case h.Len() > 0 && (!ok || last != h.At(h.Len()-1)):
					t.Errorf("%s seq %d: Last is seq %d (%v), History ends with seq %d", path, row.Events[i].Seq, last.Seq(), ok, h.At(h.Len()-1).Seq())
				case ok:
					checked++
				}
			}
		}
		dec.Close()
		f.Close()
	}
	if checked == 0 {
		t.Fatal("no log had a message")
	}
}
