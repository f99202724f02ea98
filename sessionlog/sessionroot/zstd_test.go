package sessionroot

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFrameSize: frame sizes add up to the file, every prefix of a frame
// is incomplete (not corrupt), skippable frames are sized, garbage is
// reported.
func TestFrameSize(t *testing.T) {
	plain := strings.Repeat(`{"type":"todo/write","seq":1,"time":1,"data":{"todos":[]}}`+"\n", 200)
	for _, opts := range [][]zstd.EOption{
		{zstd.WithEncoderConcurrency(1)},
		{zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true)},
		{zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedBestCompression)},
	} {
		enc, err := zstd.NewWriter(nil, opts...)
		require.NoError(t, err)
		a := enc.EncodeAll([]byte(plain), nil)
		b := enc.EncodeAll([]byte(plain[:100]), nil)
		enc.Close()
		skip := []byte{0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'x', 'y', 'z'}
		file := append(append(append([]byte(nil), a...), skip...), b...)
		r := bytes.NewReader(file)
		var off int64
		var sizes []int64
		for off < int64(len(file)) {
			n, complete, err := FrameSize(r, off, int64(len(file)))
			require.NoError(t, err)
			require.True(t, complete)
			sizes = append(sizes, n)
			off += n
		}
		assert.Equal(t, []int64{int64(len(a)), int64(len(skip)), int64(len(b))}, sizes)
		for cut := int64(1); cut < int64(len(a)); cut++ {
			_, complete, err := FrameSize(r, 0, cut)
			require.NoError(t, err)
			require.False(t, complete, "cut %d", cut)
		}
	}
	_, _, err := FrameSize(bytes.NewReader([]byte("garbage!")), 0, 8)
	assert.ErrorIs(t, err, ErrNotFrame)
}
