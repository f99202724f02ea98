package archive

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decompress(t *testing.T, b []byte) string {
	t.Helper()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	require.NoError(t, err)
	defer dec.Close()
	out, err := dec.DecodeAll(b, nil)
	require.NoError(t, err)
	return string(out)
}

// frames encodes each part as one zstd frame.
func frames(parts ...string) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		panic(err)
	}
	defer enc.Close()
	var out []byte
	for _, p := range parts {
		out = enc.EncodeAll([]byte(p), out)
	}
	return out
}

// scanFile finds where to continue a file and cuts off a torn tail: a
// final row without its newline, an incomplete or undecodable last frame.
func TestScanFile(t *testing.T) {
	h := header("s", "", 0)
	e0, e1 := ev(0, "turn/start", `{"turn":1}`), ev(1, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)
	packed := `{"type":"text-chunks","seq0":2,"time0":1,"data":{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"]}}`
	whole := frames(join(h), join(e0, e1))
	corrupt := append([]byte(nil), whole...)
	corrupt[len(corrupt)-2] ^= 0xFF // the last frame's checksum
	for _, tc := range []struct {
		name    string
		content []byte
		want    fileInfo
		keep    string // content left, when it is plain
	}{
		{"empty", nil, fileInfo{}, ""},
		{"header_only", []byte(join(h)), fileInfo{size: int64(len(h) + 1), header: true}, join(h)},
		{"torn_header", []byte(h[:10]), fileInfo{truncated: 10}, ""},
		{"rows", []byte(join(h, e0, e1)), fileInfo{size: int64(len(join(h, e0, e1))), header: true, next: 2}, join(h, e0, e1)},
		{"torn_row", []byte(join(h, e0) + e1[:5]), fileInfo{size: int64(len(join(h, e0))), header: true, next: 1, truncated: 5}, join(h, e0)},
		{"packed_last", []byte(join(h, e0, e1, packed)), fileInfo{size: int64(len(join(h, e0, e1, packed))), header: true, next: 5}, join(h, e0, e1, packed)},
		{"headerless", []byte(join(e1)), fileInfo{size: int64(len(e1) + 1), next: 2}, join(e1)},
		{"unreadable_last_row", []byte(join(h, e0, `{"no":"type"}`)), fileInfo{size: int64(len(join(h, e0, `{"no":"type"}`))), header: true, next: 1}, ""},
		{"zstd", whole, fileInfo{size: int64(len(whole)), header: true, next: 2}, ""},
		{"zstd_header_only", frames(join(h)), fileInfo{size: int64(len(frames(join(h)))), header: true}, ""},
		{"zstd_torn_frame", whole[:len(whole)-3], fileInfo{size: int64(len(frames(join(h)))), header: true, truncated: int64(len(whole) - 3 - len(frames(join(h))))}, ""},
		{"zstd_corrupt_frame", corrupt, fileInfo{size: int64(len(frames(join(h)))), header: true, truncated: int64(len(whole) - len(frames(join(h))))}, ""},
		{"zstd_torn_header", whole[:5], fileInfo{truncated: 5}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "session.jsonl")
			require.NoError(t, os.WriteFile(p, tc.content, 0o600))
			got, err := scanFile(p)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Len(t, b, int(tc.want.size))
			if tc.keep != "" {
				assert.Equal(t, tc.keep, string(b))
			}
		})
	}
}

// Whatever a file holds — it may be damaged, or not ours — scanFile does
// not panic, and what it keeps is a prefix of the file.
func FuzzScanFile(f *testing.F) {
	h := header("s", "/w", 0)
	e0 := ev(0, "turn/start", `{"turn":1}`)
	f.Add([]byte(join(h, e0)))
	f.Add([]byte(join(h, e0))[:20])
	f.Add(frames(join(h), join(e0)))
	f.Add(frames("no newline", join(e0)))
	f.Add([]byte{0x28, 0xB5, 0x2F, 0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "session.jsonl")
		require.NoError(t, os.WriteFile(p, data, 0o600))
		info, err := scanFile(p)
		if err != nil {
			return
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Len(t, b, int(info.size))
		require.Equal(t, string(data[:info.size]), string(b))
		require.GreaterOrEqual(t, info.next, int64(0))
	})
}
