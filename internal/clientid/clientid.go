// Package clientid is who wrote a session: the client an authenticator
// named, and the key that keeps two clients' sessions of the same id apart.
//
// A session belongs to the client that writes it. When a listener's
// authenticator names its clients (basicauth's username, the oidc
// extension's subject), the identity of a session is the pair (client,
// session id) wherever it is kept: the receiver's deduplication state, the
// connector's engine and journal, the Kafka key and changelog, the
// archive's layout. Key folds the pair into one string that every one of
// them keys by, and from which trace and span ids derive; a session of no
// named client (no authenticator, or one that names no one, such as
// bearertokenauth) keys by its id alone, as it always did.
//
// The package is pure (the engine uses it): reading the client from a
// request's context is logrecord.ClientFromContext.
package clientid

import (
	"strconv"
	"strings"
)

// Key is the key of client's session: the session id itself for no client,
// else a form no session id of another client (or of none) can take. It
// is injective: Split recovers the pair.
//
//	Key("", "s1")       = "s1"
//	Key("alice", "s1")  = "\x00\"alice\"s1"
//	Key("", "\x00x")    = "\x00\x00\x00x"   (an id that would look like a keyed one)
func Key(client, session string) string {
	if client == "" {
		if strings.HasPrefix(session, "\x00") {
			return "\x00\x00" + session
		}
		return session
	}
	return "\x00" + strconv.Quote(client) + session
}

// Split is Key's inverse: the client ("" for none) and the session id.
func Split(key string) (client, session string) {
	rest, ok := strings.CutPrefix(key, "\x00")
	if !ok {
		return "", key
	}
	if s, ok := strings.CutPrefix(rest, "\x00"); ok {
		return "", s
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "", key // not a key Key made: taken as a bare id
	}
	c, _ := strconv.Unquote(q)
	return c, rest[len(q):]
}

// Session is the session id of a key.
func Session(key string) string {
	_, s := Split(key)
	return s
}

// Sibling is the key of another session of key's client: a fork's parent,
// a subagent's parent.
func Sibling(key, session string) string { return Key(Client(key), session) }

// Client is the client of a key ("" for none).
func Client(key string) string {
	c, _ := Split(key)
	return c
}
