package sessionroot

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnescapeSessionID: a session directory's name gives back the id it
// escapes; names no escaping produces give none.
func TestUnescapeSessionID(t *testing.T) {
	for in, want := range map[string]string{
		"e128dda9-ed11-4868-8266-0ef90d03c3d6": "e128dda9-ed11-4868-8266-0ef90d03c3d6",
		"a~002Fb":                              "a/b",
		"x~007Ey":                              "x~y",
		"~002E~002E":                           "..",
		"~D83D~DE00":                           "😀",
		"sp~0020ace":                           "sp ace",
	} {
		got, ok := UnescapeSessionID(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "a~00", "a~zzzz", "a b", "a~002f"} {
		_, ok := UnescapeSessionID(bad)
		assert.False(t, ok, bad)
	}
}
