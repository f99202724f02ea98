package sessionlog

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestNonDigits: the lowest byte nonDigits flags is the first byte of the
// eight that is no ASCII digit, for every byte value at every position
// after digits, followed by random bytes.
func TestNonDigits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			for trial := 0; trial < 8; trial++ {
				var b [8]byte
				for k := range b {
					if k < pos {
						b[k] = byte('0' + r.IntN(10))
					} else {
						b[k] = byte(r.IntN(256))
					}
				}
				b[pos] = byte(c)
				want := 8
				for k, x := range b {
					if x < '0' || x > '9' {
						want = k
						break
					}
				}
				got := 8
				if m := nonDigits(binary.LittleEndian.Uint64(b[:])); m != 0 {
					got = bits.TrailingZeros64(m) >> 3
				}
				if got != want {
					t.Fatalf("%q: first non-digit at %d, nonDigits says %d", b[:], want, got)
				}
			}
		}
	}
}
