package sessionlog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// pinTurn is the corpus file whose log stops inside turn 1.
const pinTurn = "v0/packages/test-support/acp-snapshot/tests/fixtures/suite/pin-turn/session.jsonl"

// TestCorpus holds every real dsh log to the codec's promises: it checks
// clean, nothing is lost (the rows' bytes rebuild the file byte for byte),
// and the events carry exactly the seqs the file writes.
func TestCorpus(t *testing.T) {
	dir := testcorpus.Dir(t)
	files := testcorpus.Files(t)
	if !slices.Contains(files, pinTurn) {
		t.Fatalf("corpus lacks %s", pinTurn)
	}
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			input, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			rep := checkBytes(t, input, Options{})
			for _, v := range rep.Violations {
				t.Errorf("line %d: %v", v.Line, v)
			}
			if rep.Tail != nil {
				t.Errorf("torn tail %v", rep.Tail)
			}
			wantOpen := []int64(nil)
			if name == pinTurn {
				wantOpen = []int64{1}
			}
			if !slices.Equal(rep.DanglingTurns, wantOpen) {
				t.Errorf("open turns %v, want %v", rep.DanglingTurns, wantOpen)
			}
			wire := strings.HasPrefix(name, "wire/")
			// v0/… and v4/… files: the version their folder names, from the header.
			if want := strings.SplitN(name, "/", 2)[0]; !wire && (!rep.Format.FromHeader || rep.Format.String() != want) {
				t.Errorf("format %v, want %s from the header", rep.Format, want)
			}

			rows, _ := decodeAll(t, input, Options{})
			assertRowsMatchInput(t, input, rows)

			// Lossless: the rows, newline-joined, are the file.
			var rebuilt bytes.Buffer
			for _, r := range rows {
				rebuilt.Write(r.Bytes)
				rebuilt.WriteByte('\n')
			}
			if !bytes.Equal(rebuilt.Bytes(), input) {
				t.Errorf("rows rebuild %d bytes, the file has %d", rebuilt.Len(), len(input))
			}

			// Seqs: what an independent JSON reading of each line says.
			want := fileSeqs(t, input)
			got := map[string][]int64{}
			for _, r := range rows {
				id := ""
				if r.Wrapper != WrapNone {
					id = r.SessionID
				}
				for _, e := range r.Events {
					got[id] = append(got[id], e.Seq)
				}
			}
			if len(got) != len(want) {
				t.Errorf("sessions %d, want %d", len(got), len(want))
			}
			for id, seqs := range want {
				if !slices.Equal(got[id], seqs) {
					t.Errorf("session %q seqs\n got %v\nwant %v", id, got[id], seqs)
				}
			}
		})
	}
}

// fileSeqs reads each line with encoding/json, independently of the codec,
// and lists the event seqs it carries per session ("" for a file): an event
// row's seq, a packed row's seq0…seq0+n−1, a wrapped event's seq.
func fileSeqs(t *testing.T, input []byte) map[string][]int64 {
	t.Helper()
	type record struct {
		Type  string          `json:"type"`
		Seq   *int64          `json:"seq"`
		Seq0  *int64          `json:"seq0"`
		Data  json.RawMessage `json:"data"`
		Event json.RawMessage `json:"event"`
		// JSON-RPC and wrappers.
		Method    string `json:"method"`
		SessionID string `json:"sessionId"`
		Params    struct {
			SessionID string          `json:"sessionId"`
			Event     json.RawMessage `json:"event"`
		} `json:"params"`
	}
	out := map[string][]int64{}
	var event func(session string, raw []byte)
	event = func(session string, raw []byte) {
		var rec record
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		switch {
		case rec.Seq0 != nil:
			var d struct{ Texts, Args []string }
			if err := json.Unmarshal(rec.Data, &d); err != nil {
				t.Fatal(err)
			}
			for k := range len(d.Texts) + len(d.Args) {
				out[session] = append(out[session], *rec.Seq0+int64(k))
			}
		case rec.Seq != nil:
			out[session] = append(out[session], *rec.Seq)
		}
	}
	for line := range bytes.Lines(input) {
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		switch {
		case rec.Method == "session.event":
			event(rec.Params.SessionID, rec.Params.Event)
		case rec.Method != "" || rec.Type == "result" || rec.Type == "session":
		case rec.Type == "session_event":
			event(rec.SessionID, rec.Event)
		case rec.Type == "" && rec.Event != nil:
			event(rec.SessionID, rec.Event)
		default:
			event("", line)
		}
	}
	return out
}

// TestCorpusZstd: every session file (ours and the corpus's), compressed as
// dsh does (header frame, then small append batches), decodes to the same
// rows as the plain file.
func TestCorpusZstd(t *testing.T) {
	for _, l := range testcorpus.Logs(t) {
		name := l.Name
		if l.Stream {
			continue // live streams are never files
		}
		input, err := os.ReadFile(l.Path)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := decodeAll(t, input, Options{})
		z, _ := zstdFrames(t, input, 5)
		got, dec := decodeAll(t, z, Options{})
		if !dec.Compressed() || dec.Tail() != nil {
			t.Errorf("%s: compressed %v tail %v", name, dec.Compressed(), dec.Tail())
		}
		assertSameRows(t, got, want)
	}
}
