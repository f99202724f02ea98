//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
)

// uiAssets finds a built Jaeger UI: $JAEGER_UI_ASSETS, else ../shared/jaeger-ui
// beside the repository (the test runs in e2e/). Without one the test is
// skipped, except under CI=true, where it fails.
func uiAssets(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("JAEGER_UI_ASSETS")
	if dir == "" {
		if abs, err := filepath.Abs(filepath.Join("..", "..", "shared", "jaeger-ui")); err == nil {
			if _, err := os.Stat(filepath.Join(abs, "index.html")); err == nil {
				dir = abs
			}
		}
	}
	if dir == "" {
		skipOrFailCI(t, "no Jaeger UI assets: set JAEGER_UI_ASSETS to a built Jaeger UI (a jaeger-ui release build) or put one at ../shared/jaeger-ui")
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		t.Fatalf("JAEGER_UI_ASSETS=%s: %v (want a built Jaeger UI)", dir, err)
	}
	return dir
}

// chromiumPath finds a headless-capable Chromium: $CHROMIUM, else chromium
// or chromium-browser on PATH (Debian: apt-get install chromium).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	skipOrFailCI(t, "no chromium on PATH (Debian: apt-get install -y chromium; or set CHROMIUM)")
	return ""
}

// skipOrFailCI skips the test with one line, or fails it under CI=true.
func skipOrFailCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why + " (CI=true: required)")
	}
	t.Skip(why)
}

// artifactDir is where the browser test leaves its screenshot:
// $DSH_E2E_ARTIFACTS, else e2e/artifacts (git-ignored).
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("DSH_E2E_ARTIFACTS")
	if dir == "" {
		dir = "artifacts"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// headless runs Chromium once on url with extra flags (--dump-dom,
// --screenshot=…) and returns its standard output.
func headless(t *testing.T, bin, profile, url string, extra ...string) string {
	t.Helper()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + profile, "--window-size=1600,1000",
		"--virtual-time-budget=20000", "--run-all-compositor-stages-before-draw",
	}
	args = append(append(args, extra...), url)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = procAttr()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(extra, " "), err, lastLines(stderr.String(), 20))
	}
	return string(out)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestJaegerUI serves the real Jaeger UI from Jaeger v2 (its query
// extension's ui::assets_path, as `make demo` does), replays a session with
// tool calls through otelcol-dsh, opens the turn's trace page in headless
// Chromium and requires every span name of the turn in the rendered page;
// the page's screenshot is kept as an artifact.
func TestJaegerUI(t *testing.T) {
	assets := uiAssets(t)
	chromium := chromiumPath(t)
	ctx := context.Background()
	dir := t.TempDir()

	j := newJaegerPorts(t)
	jaegerQuery := j.query()
	jaeger := startJaeger(t, dir, "jaeger", j, "--set=extensions::jaeger_query::ui::assets_path="+assets)
	// The UI itself, not the placeholder of a build without assets.
	code, page, err := get(ctx, jaegerQuery+"/search")
	if err != nil || code != 200 || !strings.Contains(string(page), "<base href=") || strings.Contains(string(page), "not compiled with the UI assets") {
		t.Fatalf("GET /search: %d %v: want the Jaeger UI's index.html\n%.400s", code, err, page)
	}
	c := newCollector(t, dir, testConfig("to-jaeger")).toJaeger(j)
	otelcol := c.start("otelcol-dsh")

	// A v4 session, one turn of two steps with a read and a denied write.
	const session = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"
	body, err := os.ReadFile(filepath.Join("..", "testdata", "dialects", "v4-tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if res := post(t, c.ingestURL()+"/v1/sessions/"+session+"/events", viaPost, body); res.code != 202 || res.Accepted == 0 {
		t.Fatalf("post: HTTP %d %s", res.code, res.raw)
	}
	id := turnrender.TraceID(session, 1)
	var td ptrace.Traces
	poll(t, "the turn in Jaeger", 60*time.Second, func() error {
		td, err = jaegerTrace(ctx, jaegerQuery, id)
		if err == nil && td.SpanCount() < 7 {
			err = fmt.Errorf("%d spans stored, want 7", td.SpanCount())
		}
		return err
	}, jaeger, otelcol)
	names := map[string]bool{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				names[ss.At(j).Spans().At(k).Name()] = true
			}
		}
	}
	for _, prefix := range []string{"invoke_agent", "step", "chat", "execute_tool read", "execute_tool write"} {
		found := false
		for n := range names {
			found = found || strings.HasPrefix(n, prefix)
		}
		if !found {
			t.Fatalf("the stored turn has no span %q…: %v", prefix, names)
		}
	}

	url := jaegerQuery + "/trace/" + id.String()
	profile := filepath.Join(dir, "chromium")
	dom := headless(t, chromium, profile, url, "--dump-dom")
	for n := range names {
		if !strings.Contains(dom, n) {
			t.Errorf("the rendered trace page has no span %q", n)
		}
	}
	if !strings.Contains(dom, turnengine.DefaultAgentName) {
		t.Errorf("the rendered trace page does not name the service %q", turnengine.DefaultAgentName)
	}
	art := artifactDir(t)
	if err := os.WriteFile(filepath.Join(art, "jaeger-trace.html"), []byte(dom), 0o644); err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		t.Logf("rendered DOM kept in %s", filepath.Join(art, "jaeger-trace.html"))
	}
	// The search page, as the demo links it: the service and the turn's own
	// time window (µs, lookback=custom), far outside the UI's default hour.
	var rootSpan ptrace.Span
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		ss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < ss.Len(); j++ {
			for k := 0; k < ss.At(j).Spans().Len(); k++ {
				if sp := ss.At(j).Spans().At(k); sp.ParentSpanID().IsEmpty() {
					rootSpan = sp
				}
			}
		}
	}
	search := fmt.Sprintf("%s/search?service=%s&start=%d&end=%d&lookback=custom&limit=20", jaegerQuery,
		turnengine.DefaultAgentName, rootSpan.StartTimestamp().AsTime().UnixMicro()-60_000_000, rootSpan.EndTimestamp().AsTime().UnixMicro()+60_000_000)
	found := headless(t, chromium, profile, search, "--dump-dom")
	// A result links to its trace page (its title is broken into spans).
	if !strings.Contains(found, `href="/trace/`+id.String()+`"`) {
		os.WriteFile(filepath.Join(art, "jaeger-search.html"), []byte(found), 0o644)
		t.Errorf("the search page %s lists no turn %s; DOM kept in %s", search, id, filepath.Join(art, "jaeger-search.html"))
	}

	shot := filepath.Join(art, "jaeger-trace.png")
	os.Remove(shot)
	headless(t, chromium, profile, url, "--screenshot="+shot, "--hide-scrollbars")
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Fatalf("screenshot %s: %v (size %v): want a rendered page", shot, err, fi)
	}
	t.Logf("screenshot of %s: %s", url, shot)
}
