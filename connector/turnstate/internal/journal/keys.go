package journal

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
)

// The journal's keys (the layout in the package comment).

// SessionKey is the key of a session's entry.
func SessionKey(id string) string { return "s/" + strconv.Quote(id) }

func headerKey(id string) string { return SessionKey(id) + "/h" }

func chunkKey(id string, n int) string {
	return SessionKey(id) + "/c/" + strconv.Itoa(n)
}

func bucketKey(b int) string { return fmt.Sprintf("idx/%02d", b) }

const buckets = 64

func bucketOf(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % buckets)
}

// SessionGroup is a journal key's session part (`s/"ID"`), which picks its
// changelog partition.
func SessionGroup(key string) string {
	if rest, ok := strings.CutPrefix(key, "s/"); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			return "s/" + q
		}
	}
	return key
}

// sessionOfKey is the session id of a journal key.
func sessionOfKey(key string) (string, bool) {
	rest, ok := strings.CutPrefix(SessionGroup(key), "s/")
	if !ok {
		return "", false
	}
	id, err := strconv.Unquote(rest)
	return id, err == nil
}

func marshalLogs(ld plog.Logs) ([]byte, error) {
	var m plog.ProtoMarshaler
	return m.MarshalLogs(ld)
}

// BucketKeyOf is the key of the idx bucket that lists session id.
func BucketKeyOf(id string) string { return bucketKey(bucketOf(id)) }
