package jsontape

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
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

// TestPlainInt reads every length of plain integer, signed and not, at
// the end of a row and with bytes after it, against strconv.
func TestPlainInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for l := 1; l <= 18; l++ {
		for range 2000 {
			var b strings.Builder
			if rng.IntN(2) == 0 {
				b.WriteByte('-')
			}
			for k := range l {
				d := byte('0' + rng.IntN(10))
				if k == 0 && l > 1 && d == '0' {
					d = '1'
				}
				b.WriteByte(d)
			}
			num := b.String()
			want, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			for _, pad := range []string{"", "}", ",\"k\":12345678}", "]]]]]]]]]"} {
				row := "[" + num + pad
				if got := plainInt(row, 1, 1+len(num)); got != want {
					t.Fatalf("plainInt(%q) = %d, want %d", row, got, want)
				}
			}
		}
	}
	for _, num := range []string{"0", "-0", "9", "99999999", "100000000", "999999999999999999", "-999999999999999999"} {
		want, _ := strconv.ParseInt(num, 10, 64)
		if got := plainInt(num, 0, len(num)); got != want {
			t.Errorf("plainInt(%q) = %d, want %d", num, got, want)
		}
	}
}

// TestDigits8 checks the eight-digit reduction on every digit in every
// place, and on zero bytes in the low places.
func TestDigits8(t *testing.T) {
	for p := range 8 {
		for d := uint64(0); d <= 9; d++ {
			x := uint64(0x3030303030303030)&^(0xFF<<(8*p)) | ('0'+d)<<(8*p)
			want := d
			for range 7 - p {
				want *= 10
			}
			if got := digits8(x); got != want {
				t.Errorf("digits8(%#x) = %d, want %d", x, got, want)
			}
			if got := digits8(x << (8 * (7 - p)) >> (8 * (7 - p)) << (8 * (7 - p))); got != d {
				t.Errorf("digit %d alone in the top place after %d zero bytes: %d", d, 7-p, got)
			}
		}
	}
}
