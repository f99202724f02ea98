package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/internal/turnengine"
	"github.com/dshtrace/dshtrace/internal/turnrender"
	"github.com/dshtrace/dshtrace/sessionlog"
)

// Every generated file passes the checks of `dshtrace check` (the same
// sessionlog.Check) with no violation, and the manifest's totals are what
// the codec and the turn engine find in the files.
func TestGeneratedCorpusChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Params
	}{
		{"mix", Params{Sessions: 4, Turns: 3, Steps: 3, Tools: 2, Chunks: 20, Format: "mix"}},
		{"v0-sparse-chunks", Params{Sessions: 2, Turns: 2, Steps: 2, Tools: 1, Chunks: 2, Format: "v0"}},
		{"v0-one-chunk", Params{Sessions: 1, Turns: 2, Steps: 1, Tools: 0, Chunks: 1, Format: "v0"}},
		{"v4-many-tools", Params{Sessions: 2, Turns: 2, Steps: 4, Tools: 5, Chunks: 3, Format: "v4"}},
		{"open-last", Params{Sessions: 3, Turns: 2, Steps: 3, Tools: 2, Chunks: 5, Format: "mix", OpenLast: true}},
		{"wrapped", Params{Sessions: 3, Turns: 2, Steps: 2, Tools: 1, Chunks: 4, Format: "v4", OpenLast: true, Wrapped: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Seed = 7
			dir := t.TempDir()
			m, err := Generate(dir, tc.p, true)
			require.NoError(t, err)

			files, err := filepath.Glob(filepath.Join(dir, projectDir, "*", "session*.jsonl"))
			require.NoError(t, err)
			if tc.p.Wrapped {
				files = []string{filepath.Join(dir, WrappedFile)}
			}
			require.Len(t, files, m.Files)

			var events, rows, size, closed, open int64
			var spans int
			for _, f := range files {
				b, err := os.ReadFile(f)
				require.NoError(t, err)
				size += int64(len(b))
				rows += int64(bytes.Count(b, []byte{'\n'}))

				rep, err := sessionlog.Check(bytes.NewReader(b), sessionlog.Options{})
				require.NoError(t, err)
				assert.Empty(t, rep.Violations, "%s", f)
				assert.Nil(t, rep.Tail, "no torn tail")
				events += int64(rep.Events)
				for _, turn := range rep.Turns {
					if turn.Reason == "completed" {
						closed++
					}
				}
				open += int64(len(rep.DanglingTurns))

				e := turnengine.New(turnengine.Config{})
				now := time.Unix(1_800_000_000, 0)
				require.NoError(t, turnengine.Replay(e, bytes.NewReader(b), sessionlog.Options{}, "fallback", now))
				for _, turn := range e.Drain() {
					if !turn.Dangling() {
						spans += turnrender.Traces("github.com/dshtrace/dshtrace/connector/turnstate", []*turnengine.Turn{turn}).SpanCount()
					}
				}
			}
			assert.Equal(t, m.Events, events, "events")
			assert.Equal(t, m.Rows, rows, "rows")
			assert.Equal(t, m.Bytes, size, "bytes")
			assert.Equal(t, m.Turns, closed, "closed turns")
			assert.Equal(t, m.OpenTurns, open, "open turns")
			assert.EqualValues(t, m.Spans, spans, "spans of the closed turns")
			if tc.p.OpenLast {
				assert.EqualValues(t, tc.p.Sessions, m.OpenTurns)
			}
			if tc.p.Format != "v4" && tc.p.Chunks >= 3 {
				assert.Greater(t, m.Events, m.Rows, "v0 packs chunk runs")
			}

			var onDisk Manifest
			b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &onDisk))
			assert.Equal(t, *m, onDisk)
		})
	}
}

// The same flags write the same bytes; another seed writes others.
func TestDeterministic(t *testing.T) {
	p := Params{Sessions: 2, Turns: 2, Steps: 2, Tools: 1, Chunks: 4, Format: "mix", Seed: 3}
	read := func(p Params) map[string][]byte {
		dir := t.TempDir()
		_, err := Generate(dir, p, true)
		require.NoError(t, err)
		out := map[string][]byte{}
		require.NoError(t, filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				rel, _ := filepath.Rel(dir, path)
				out[rel], err = os.ReadFile(path)
			}
			return err
		}))
		return out
	}
	assert.Equal(t, read(p), read(p))
	q := p
	q.Seed = 4
	assert.NotEqual(t, read(p), read(q))
}

func TestRefusesExistingCorpus(t *testing.T) {
	dir := t.TempDir()
	p := Params{Sessions: 1, Turns: 1, Steps: 1, Chunks: 1, Format: "v4"}
	_, err := Generate(dir, p, false)
	require.NoError(t, err)
	_, err = Generate(dir, p, false)
	assert.ErrorContains(t, err, "already holds a corpus")

	p.Wrapped = true
	p.Format = "mix"
	_, err = Generate(t.TempDir(), p, false)
	assert.ErrorContains(t, err, "v4 events only")
}

// The CLI itself, as a user would run it: `dshtrace check --json` on every
// file of a small mixed corpus reports its events and no violation.
func TestDshtraceCheckCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/dshtrace")
	}
	dir := t.TempDir()
	m, err := Generate(dir, Params{Sessions: 4, Turns: 2, Steps: 3, Tools: 2, Chunks: 5, Format: "mix", Seed: 9}, true)
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(dir, projectDir, "*", "session*.jsonl"))
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "dshtrace")
	build := exec.Command("go", "build", "-o", bin, "github.com/dshtrace/dshtrace/cmd/dshtrace")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	out, err = exec.Command(bin, append([]string{"check", "--json"}, files...)...).Output()
	require.NoError(t, err, "exit status: a violation or an unreadable file\n%s", out)
	var events int64
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte{'\n'}) {
		var doc struct {
			File       string            `json:"file"`
			Events     int64             `json:"events"`
			Violations []json.RawMessage `json:"violations"`
		}
		require.NoError(t, json.Unmarshal(line, &doc))
		assert.Empty(t, doc.Violations, doc.File)
		events += doc.Events
	}
	assert.Equal(t, m.Events, events)
}
