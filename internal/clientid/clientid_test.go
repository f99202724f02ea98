package clientid

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeySplit(t *testing.T) {
	for _, c := range []struct{ client, session, key string }{
		{"", "s1", "s1"},
		{"alice", "s1", "\x00\"alice\"s1"},
		{"bob", "s1", "\x00\"bob\"s1"},
		{"", "\x00x", "\x00\x00\x00x"},
		{"a\"b\x00", "\"c", "\x00\"a\\\"b\\x00\"\"c"},
		{"alice", "", "\x00\"alice\""},
	} {
		assert.Equal(t, c.key, Key(c.client, c.session), "%q %q", c.client, c.session)
		gc, gs := Split(c.key)
		assert.Equal(t, c.client, gc)
		assert.Equal(t, c.session, gs)
	}
	// Two clients' sessions of one id, and no client's, never share a key.
	keys := map[string]bool{}
	for _, cl := range []string{"", "alice", "bob", "\"alice\""} {
		for _, s := range []string{"shared-1", "\x00\"alice\"shared-1", "\"alice\"shared-1"} {
			k := Key(cl, s)
			assert.False(t, keys[k], "key %q taken twice", k)
			keys[k] = true
		}
	}
}

func FuzzKeySplit(f *testing.F) {
	f.Add("alice", "s1")
	f.Add("", "\x00\"x\"y")
	f.Fuzz(func(t *testing.T, cl, s string) {
		gc, gs := Split(Key(cl, s))
		if gc != cl || gs != s {
			t.Fatalf("Split(Key(%q, %q)) = %q, %q", cl, s, gc, gs)
		}
	})
}

func TestSibling(t *testing.T) {
	assert.Equal(t, "p", Sibling("s", "p"))
	assert.Equal(t, Key("alice", "p"), Sibling(Key("alice", "s"), "p"))
}
