package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
)

// scanSeeds are contents the scanner must read as encoding/json does, or
// leave to it: the common shapes and the ways it gives up.
var scanSeeds = []string{
	`[]`, ` [ ] `, `null`, `"bare"`, `[{"type":"text","text":"hi"}]`,
	`[{"type":"text","text":"a \"quoted\" \u00e9 \ud83d\ude00 \n line"}]`,
	`[{"type":"reasoning","text":"think"},{"type":"text","text":"  "},{"type":"text","text":"answer"}]`,
	`[{"type":"tool-call","id":"c1","name":"read","arguments":"{\"path\":\"a\"}"}]`,
	`[{"type":"tool_use","id":"c1","name":"read","input":{"path":"a","n":[1,2.5e3,-0,true,null]}}]`,
	`[{"type":"tool-call","id":"c1","name":"x","arguments":null}]`,
	`[{"type":"tool-result","toolCallId":"c1","isError":true,"content":[{"type":"text","text":"out"}]}]`,
	`[{"type":"tool-result","toolCallId":"c1","content":"plain"}]`,
	`[{"type":"tool-result","toolCallId":"c1","content":[null,{"type":"text"}]}]`,
	`[{"type":"tool-result","content":[{"type":"text","text":"a"}],"content":[{"type":"x"}]}]`,
	`[{"type":"tool-addition","toolName":"write"},{"type":"tool-removal","toolName":"w"}]`,
	`[{"type":"image","mimeType":"image/png","data":"AAAA"}]`,
	`[{"Type":"text","text":"case"}]`, `[{"type":"text","TEXT":"x","text":"y"}]`, `[{"type":"text","\u0074ext":"escaped key"}]`,
	`[{"type":"text","text":null}]`, `[{"type":"text","text":5}]`, `[{"type":"text","isError":"no"}]`,
	`[{"type":"text","text":"a","text":"b"}]`, `[{"type":"text","text":"a","text":null}]`,
	`["a string block", 5, null, true, [1]]`, `[null]`, `[{"type":"text","text":"x"},]`, `[{"type":"text" "text":"x"}]`,
	`[{"type":"text","text":"x"}] trailing`, `[{"type":"text","text":"bad \x escape"}]`, "[{\"type\":\"text\",\"text\":\"\xff\"}]",
	"[{\"type\":\"text\",\"text\":\"tab\tinside\"}]", `[{"type":"text","text":"\ud800 lone"}]`, `[{"type":"k","name":"\u212a"}]`,
	`[{"typе":"text","text":"cyrillic key"}]`, `[{"type":"x","n":01}]`, `[{"type":"x","n":1.}]`, `[{"type":"x","n":-}]`, `[{"type":"x","n":1e}]`,
	" lead  and\ttrail \n", "a\u00a0b\u0085c\u2028d", "\xff\xfe word \xff", "ünïcödé wörds here", "",
	`{"type":"x","data":{"a":1,"b":[1,"x",null,true,{"c":2.5e3}],"a":2,"e":[]}}`, `{"data":null}`, `{"data":5}`, `{"DATA":{}}`,
	`{"data":{}} trailing`, `{"data":{"k":"\u00e9"}} {"x"`, `{"data":{"a":1},"data":{"b":2}}`, `{"seq":1,"data":{"n":-0.5E+2}}`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
}

// FuzzParts holds the content scanner to encoding/json: whatever content
// the scanner reads — as blocks, as Excerpt's first look, as an event's
// data, as a string — it reads as encoding/json does.
func FuzzParts(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add(s)
	}
	for _, path := range goldenLogs(f) {
		seedContents(f, path)
	}
	f.Fuzz(func(t *testing.T, content string) {
		if parts, ok := scanParts(content); ok {
			if want := decodeParts(content); !reflect.DeepEqual(parts, want) {
				t.Errorf("Parts(%q):\nscanned %#v\ndecoded %#v", content, parts, want)
			}
		}
		if text, matched, ok := lightExcerpt(content); ok {
			if wantText, wantMatched := decodeLight(content); text != wantText || matched != wantMatched {
				t.Errorf("Excerpt's look at %q: scanned %q %v, decoded %q %v", content, text, matched, wantText, wantMatched)
			}
		}
		if d, ok := scanData(content); ok {
			var env struct {
				Data data `json:"data"`
			}
			if !decodeJSON([]byte(content), &env) || !reflect.DeepEqual(d, env.Data) {
				t.Errorf("data of %q: scanned %#v, decoded %#v", content, d, env.Data)
			}
		}
		for _, n := range []int{0, 1, 5, 40} {
			if got, want := cutLine(content, n), cut(oneLine(content), n); got != want {
				t.Errorf("cutLine(%q, %d) = %q, want %q", content, n, got, want)
			}
		}
		sc := newScanner(content)
		if s, ok := sc.str(); ok && sc.end() {
			var want string
			if err := json.Unmarshal([]byte(content), &want); err != nil || s != want {
				t.Errorf("string %q: scanned %q, decoded %q (%v)", content, s, want, err)
			}
		}
	})
}

// seedContents adds every row of a log, and every message content of its
// page.
func seedContents(f *testing.F, path string) {
	f.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	for _, row := range strings.Split(string(b), "\n") {
		f.Add(row)
	}
	for _, s := range buildFile(f, path, Options{}).Sessions {
		for _, m := range s.msgs {
			f.Add(m.Content)
		}
	}
}

// TestScannerReadsTheCorpus: the scanner reads the content of the
// corpus's messages itself, not leaving it to encoding/json, and as
// encoding/json does.
func TestScannerReadsTheCorpus(t *testing.T) {
	read, all := 0, 0
	for _, l := range testcorpus.Logs(t) {
		for _, s := range buildFile(t, l.Path, Options{}).Sessions {
			for _, m := range s.msgs {
				all++
				parts, ok := scanParts(m.Content)
				if !ok {
					continue
				}
				read++
				if want := decodeParts(m.Content); !reflect.DeepEqual(parts, want) {
					t.Errorf("%s seq %d: scanned %#v, decoded %#v", filepath.Base(l.Path), m.Seq, parts, want)
				}
			}
		}
	}
	t.Logf("%d of %d contents scanned", read, all)
	if read < all*9/10 {
		t.Errorf("the scanner read only %d of %d contents", read, all)
	}
}
