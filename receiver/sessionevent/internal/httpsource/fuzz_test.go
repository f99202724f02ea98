package httpsource

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/dshtrace/dshtrace/sessionlog/sessionroot"
)

// FuzzHTTPBody feeds arbitrary bodies to the request parser of both
// endpoints: it never panics, refusals carry a status and a message, and an
// accepted plain body yields rows that are lines of the input, byte for
// byte, in seq order per session.
func FuzzHTTPBody(f *testing.F) {
	for _, dir := range []string{"dialects", "hostile"} {
		entries, _ := os.ReadDir(filepath.Join(repoTestdata, dir))
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join(repoTestdata, dir, e.Name())); err == nil && len(b) < 4<<10 {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"type":"todo/write","seq":3,"time":1,"data":{"todos":[]}}`))
	f.Add(zstdBody(f, []byte(`{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}`+"\n")))
	f.Add(gzipBody(f, []byte(`{"sessionId":"s","event":{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}}`)))
	f.Add([]byte("\n\n\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, ep := range []endpoint{endpointSession, endpointLines} {
			pb, rerr := parseBody(bytes.NewReader(body), parseOptions{endpoint: ep, session: "s", maxLine: 1 << 12, maxBody: 1 << 16})
			if rerr != nil {
				if rerr.status < 400 || rerr.status > 499 || rerr.msg == "" || rerr.reason == "" {
					t.Fatalf("refusal without a 4xx status, message or reason: %+v", rerr)
				}
				continue
			}
			compressed := sessionroot.IsZstd(body) || bytes.HasPrefix(body, gzipMagic)
			lines := map[string]bool{}
			for _, l := range bytes.Split(body, []byte("\n")) {
				lines[string(l)] = true
			}
			n := 0
			for _, s := range pb.sessions {
				if s.header != nil {
					n++
					if !compressed && !lines[string(s.header.Bytes)] {
						t.Fatalf("header row is no line of the body: %q", s.header.Bytes)
					}
				}
				for i, r := range s.rows {
					n++
					if !compressed && !lines[string(r.Bytes)] {
						t.Fatalf("row is no line of the body: %q", r.Bytes)
					}
					if i > 0 && r.FirstSeq() <= s.rows[i-1].LastSeq() {
						t.Fatalf("rows out of seq order or overlapping")
					}
				}
				n += s.dups
			}
			if n != pb.rows {
				t.Fatalf("%d rows kept for %d counted", n, pb.rows)
			}
		}
	})
}
