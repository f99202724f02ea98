package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/dshtrace/dshtrace/internal/findings"
	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// loopsLog is the repository's log whose one turn has three findings.
var loopsLog = filepath.Join("..", "..", "..", "..", "testdata", "findings", "loops.jsonl")

// shownFinding is what a page shows of a finding: the badge in the turn's
// summary, the explanation and the links to its evidence in its body.
type shownFinding struct {
	name, explanation string
	links             []string
}

// shownFindings reads each turn's findings off a page, by turn anchor.
func shownFindings(t *testing.T, page string) (badges map[string][]string, shown map[string][]shownFinding) {
	t.Helper()
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	badges, shown = map[string][]string{}, map[string][]shownFinding{}
	var walk func(n *html.Node, turn string, inSummary bool)
	walk = func(n *html.Node, turn string, inSummary bool) {
		if n.Type == html.ElementNode {
			switch {
			case n.Data == "details" && attr(n, "class") == "turn":
				turn = attr(n, "id")
			case n.Data == "summary" && n.Parent != nil && attr(n.Parent, "class") == "turn":
				inSummary = true
			case n.Data == "span" && attr(n, "class") == "badge finding" && inSummary:
				badges[turn] = append(badges[turn], textOf(n))
			case n.Data == "div" && attr(n, "class") == "findings":
				for p := n.FirstChild; p != nil; p = p.NextSibling {
					if p.Type == html.ElementNode && p.Data == "p" {
						shown[turn] = append(shown[turn], readFinding(p))
					}
				}
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, turn, inSummary)
		}
	}
	walk(root, "", false)
	return badges, shown
}

// readFinding reads one finding's paragraph.
func readFinding(p *html.Node) shownFinding {
	var f shownFinding
	var text strings.Builder
	for c := p.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.ElementNode && attr(c, "class") == "badge finding":
			f.name = textOf(c)
		case c.Type == html.ElementNode && attr(c, "class") == "evidence":
			for a := c.FirstChild; a != nil; a = a.NextSibling {
				if a.Type == html.ElementNode && a.Data == "a" {
					f.links = append(f.links, attr(a, "href"))
				}
			}
		case c.Type == html.TextNode:
			text.WriteString(c.Data)
		}
	}
	f.explanation = strings.TrimSpace(text.String())
	return f
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// evidenceLinks are the links a finding's evidence should have.
func evidenceLinks(f findings.Finding) []string {
	var out []string
	for _, s := range f.Seqs {
		out = append(out, "#seq-"+strconv.FormatInt(s, 10))
	}
	for _, id := range f.CallIDs {
		out = append(out, "#call-"+id)
	}
	return out
}

// TestFindingsOnThePage: the turn of the looping log shows its three
// findings — a badge each in its summary, and in its body each finding's
// explanation with links to the rows and calls of its evidence — with and
// without content; a log without findings shows none.
func TestFindingsOnThePage(t *testing.T) {
	want := []shownFinding{{
		name:        findings.ToolLoop,
		explanation: "job_output was called 3 times with the same arguments and got the same result each time.",
		links:       []string{"#seq-3", "#seq-4", "#seq-8", "#seq-9", "#seq-13", "#seq-14", "#call-call_1", "#call-call_2", "#call-call_3"},
	}, {
		name:        findings.ToolErrorStreak,
		explanation: "3 tool calls in a row failed, with no successful one between them.",
		links:       []string{"#seq-18", "#seq-19", "#seq-23", "#seq-24", "#seq-28", "#seq-29", "#call-call_4", "#call-call_5", "#call-call_6"},
	}, {
		name:        findings.UnansweredToolCall,
		explanation: "dsh ended the turn while 1 tool call never got a result.",
		links:       []string{"#seq-33", "#seq-35", "#call-call_7"},
	}}
	for _, noContent := range []bool{false, true} {
		page := render(t, loopsLog, Options{NoContent: noContent})
		d := checkInert(t, loopsLog, page)
		badges, shown := shownFindings(t, page)
		if got, want := badges["turn-1"], []string{findings.ToolLoop, findings.ToolErrorStreak, findings.UnansweredToolCall}; !slices.Equal(got, want) {
			t.Errorf("no content %v: turn 1's badges are %q, want %q", noContent, got, want)
		}
		if !reflect.DeepEqual(shown["turn-1"], want) {
			t.Errorf("no content %v: turn 1 shows\n%+v\nwant\n%+v", noContent, shown["turn-1"], want)
		}
		for _, f := range shown["turn-1"] {
			for _, l := range f.links {
				if !d.ids[strings.TrimPrefix(l, "#")] {
					t.Errorf("no content %v: %s links to %s, no element of the page", noContent, f.name, l)
				}
			}
		}
		if noContent {
			main := page[strings.Index(page, "<main>"):]
			for _, c := range []string{"still running", "/etc/hosts", "make test", "writing outside"} {
				if strings.Contains(main, c) {
					t.Errorf("without content: %q is on the page", c)
				}
			}
		}
	}
	clean := filepath.Join("..", "..", "..", "..", "testdata", "dialects", "v4-tools.jsonl")
	page := render(t, clean, Options{})
	if badges, shown := shownFindings(t, page); len(badges) > 0 || len(shown) > 0 {
		t.Errorf("%s: findings on the page of a log without any: %v %v", clean, badges, shown)
	}
	if strings.Contains(page, `class="badge finding"`) || strings.Contains(page, `class="findings"`) {
		t.Errorf("%s: a finding's markup on the page of a log without any", clean)
	}
}

// TestFindingsAreTheEngines: every turn of the repository's logs shows
// exactly the findings the turn engine reports with the default
// thresholds, as `dshtrace findings` and the collector do.
func TestFindingsAreTheEngines(t *testing.T) {
	logs := append(repoLogs(t), loopsLog)
	found := false
	for _, path := range logs {
		if filepath.Base(path) == "unsupported-version.jsonl" {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		eng := turnengine.New(turnengine.Config{Findings: findings.Defaults()})
		if err := turnengine.Replay(eng, bytes.NewReader(raw), sessionlog.Options{}, FallbackSession(path), time.Unix(0, 0)); err != nil {
			continue // an unreadable log has no page either
		}
		want := map[string][]findings.Finding{}
		for _, et := range eng.Drain() {
			if len(et.Findings) > 0 {
				want[et.SessionID+" "+strconv.FormatInt(et.StartSeq, 10)] = et.Findings
			}
		}
		p := buildFile(t, path, Options{})
		got := map[string][]findings.Finding{}
		for _, s := range p.Sessions {
			for _, tn := range s.Turns {
				if len(tn.Findings) > 0 {
					got[s.ID+" "+strconv.FormatInt(tn.StartSeq, 10)] = tn.Findings
				}
				if n := len(tn.Findings); n > 0 {
					found = true
					if s.Totals.Findings[tn.Findings[0].Name] == 0 {
						t.Errorf("%s: session %s counts no %s", path, s.ID, tn.Findings[0].Name)
					}
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the page's findings\n%+v\nthe engine's\n%+v", path, got, want)
		}
		var b bytes.Buffer
		if err := Render(&b, p, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		_, shown := shownFindings(t, b.String())
		for _, s := range p.Sessions {
			for _, tn := range s.Turns {
				var links [][]string
				for _, f := range tn.Findings {
					links = append(links, evidenceLinks(f))
				}
				var gotLinks [][]string
				for _, f := range shown[tn.Anchor] {
					gotLinks = append(gotLinks, f.links)
				}
				if s.Prefix == "" && !reflect.DeepEqual(gotLinks, links) {
					t.Errorf("%s: turn %s links %q, want %q", path, tn.Anchor, gotLinks, links)
				}
			}
		}
	}
	if !found {
		t.Error("no log with findings")
	}
}
