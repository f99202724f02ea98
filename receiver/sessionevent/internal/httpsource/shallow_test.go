package httpsource

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dshtrace/dshtrace/internal/testcorpus"
	"github.com/dshtrace/dshtrace/receiver/sessionevent/internal/httpsource/dedup"
)

// TestShallowRequestsJudgedAsFull: a request of one session that begins
// past seq 0 is decoded shallowly after its first row; it must be judged
// exactly as a full decode judges it — the same refusal (status, code,
// line, seq) or the same rows, kinds and inferred format — whether it
// stays past seq 0 (judged row by row) or holds seq 0 further on (decoded
// again in full, judged against every invariant), with and without a
// version remembered for the session. Every log of the
// repository's testdata (hostile cases included) and the corpus when found,
// cut and reordered several ways.
func TestShallowRequestsJudgedAsFull(t *testing.T) {
	paths := testcorpus.All(t)
	hostile, err := filepath.Glob(filepath.Join(filepath.Dir(filepath.Dir(paths[0])), "hostile", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, hostile)
	bodies, shallow := 0, 0
	for _, p := range append(paths, hostile...) {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		lines := bytes.SplitAfter(raw, []byte("\n"))
		if len(lines) > 0 && len(bytes.TrimSpace(lines[len(lines)-1])) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) < 3 {
			continue
		}
		for name, body := range cuts(lines) {
			// Without a version remembered for the session, and with the
			// ones a header of an earlier request leaves.
			for _, v := range []int{dedup.UnknownVersion, 3, 4} {
				bodies++
				if judgeBoth(t, fmt.Sprintf("%s (%s, version %d)", filepath.Base(p), name, v), body, v) {
					shallow++
				}
			}
		}
	}
	require.NotZero(t, shallow, "no request was decoded shallowly")
	t.Logf("%d bodies, %d of them begun shallowly", bodies, shallow)
}

// cuts are request bodies made of a log's lines: its second half; the log
// with its first two lines moved to the end (so a header and seq 0, when
// it has them, come after rows past seq 0); the log from its third line.
func cuts(lines [][]byte) map[string][]byte {
	join := func(parts ...[][]byte) []byte {
		var b []byte
		for _, p := range parts {
			for _, l := range p {
				b = append(b, l...)
				if len(l) == 0 || l[len(l)-1] != '\n' {
					b = append(b, '\n')
				}
			}
		}
		return b
	}
	return map[string][]byte{
		"second half":          join(lines[len(lines)/2:]),
		"first two lines last": join(lines[2:], lines[:2]),
		"from line 3":          join(lines[2:]),
	}
}

// judgeBoth parses body with and without shallow decoding and requires the
// same outcome; it reports whether the default parse began shallowly.
func judgeBoth(t *testing.T, what string, body []byte, version int) bool {
	t.Helper()
	o := parseOptions{endpoint: endpointSession, session: "s", maxLine: 4 << 20,
		version: func(string) int { return version }}
	full := o
	full.full = true
	pf, ef := parseBody(bytes.NewReader(body), full)
	defer pf.release()
	ps, es := parseBody(bytes.NewReader(body), o)
	defer ps.release()
	begun := false
	for _, s := range ps.sessions {
		begun = begun || s.shallow || s.redecoded
	}
	if (ef == nil) != (es == nil) {
		t.Fatalf("%s: full parse %v, shallow %v", what, ef, es)
	}
	if ef != nil {
		if ef.status != es.status || ef.code != es.code || ef.line != es.line || ef.seq != es.seq || ef.reason != es.reason {
			t.Fatalf("%s: full refuses %d %s line %d seq %d (%s), shallow %d %s line %d seq %d (%s)", what,
				ef.status, ef.code, ef.line, ef.seq, ef.msg, es.status, es.code, es.line, es.seq, es.msg)
		}
		return begun
	}
	require.Equal(t, len(pf.sessions), len(ps.sessions), what)
	require.Equal(t, pf.rows, ps.rows, what)
	for i, f := range pf.sessions {
		s := ps.sessions[i]
		require.Equal(t, f.dec.Format(), s.dec.Format(), "%s: inferred format", what)
		require.Equal(t, f.dups, s.dups, what)
		require.Equal(t, f.header != nil, s.header != nil, what)
		require.Equal(t, len(f.rows), len(s.rows), what)
		for j, fr := range f.rows {
			sr := s.rows[j]
			require.Equal(t, fr.Kind, sr.Kind, what)
			require.Equal(t, fr.Line, sr.Line, what)
			require.Equal(t, fr.FirstSeq(), sr.FirstSeq(), what)
			require.Equal(t, len(fr.Events), len(sr.Events), what)
			for k := range fr.Events {
				fe, se := &fr.Events[k], &sr.Events[k]
				require.Equal(t, fe.TurnModel(f.dec.Format()), se.TurnModel(s.dec.Format()), "%s line %d", what, fr.Line)
				switch fe.Type {
				case "tool/result": // what records and the context-free checks read
					require.Equal(t, [2]bool{fe.IsError, fe.HasErrorDetail}, [2]bool{se.IsError, se.HasErrorDetail}, "%s line %d", what, fr.Line)
				case "request/header":
					require.Equal(t, fe.HasSystem, se.HasSystem, "%s line %d", what, fr.Line)
				}
				require.Equal(t, fe.Reason.Kind, se.Reason.Kind, "%s line %d", what, fr.Line)
			}
		}
	}
	return begun
}
