package sessionroot

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The names of a session root: the project directory from a header's cwd,
// the session directory from the escaped session id, and the file of each
// format generation. The escaping never yields a path separator, "." or
// "..", so every name built here stays inside the root.

// NoCwdDir is the project directory of sessions without a cwd (docs/format.md §2.3).
const NoCwdDir = "_no-cwd"

// maxSlug is the longest project slug, in code units (docs/format.md §2.3).
const maxSlug = 251

const hexDigits = "0123456789ABCDEF"

// literal reports whether a UTF-16 code unit is copied as is: [A-Za-z0-9._-].
func literal(u uint16) bool {
	return u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9' || u == '.' || u == '_' || u == '-'
}

func escapeUnit(b *strings.Builder, u uint16) {
	b.WriteByte('~')
	b.WriteByte(hexDigits[u>>12&0xF])
	b.WriteByte(hexDigits[u>>8&0xF])
	b.WriteByte(hexDigits[u>>4&0xF])
	b.WriteByte(hexDigits[u&0xF])
}

// EscapeSessionID is the session directory name of id (docs/format.md §2.2): "." and ".."
// as a whole become ~002E and ~002E~002E; otherwise every UTF-16 code unit
// outside [A-Za-z0-9._-] — "/", "\", NUL, "~", each half of a surrogate
// pair — becomes "~" and four upper-case hex digits. The id must not be
// empty. (Invalid UTF-8 in a Go string reads as U+FFFD.)
func EscapeSessionID(id string) string {
	switch id {
	case ".":
		return "~002E"
	case "..":
		return "~002E~002E"
	}
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(id)) {
		if literal(u) {
			b.WriteByte(byte(u))
		} else {
			escapeUnit(&b, u)
		}
	}
	return b.String()
}

// ProjectDir is the project directory of a session whose header has cwd
// (docs/format.md §2.3): "/", "\" and ":" become "-" (a run of them a single "-"), other
// code units outside [A-Za-z0-9._-] are escaped as in EscapeSessionID,
// leading "-" are stripped ("root" if nothing is left), the slug is cut at
// 251 code units and wrapped as --slug--. No cwd gives "_no-cwd".
func ProjectDir(cwd string) string {
	if cwd == "" {
		return NoCwdDir
	}
	var b strings.Builder
	sep := false
	for _, u := range utf16.Encode([]rune(cwd)) {
		switch {
		case u == '/' || u == '\\' || u == ':':
			if !sep {
				b.WriteByte('-')
			}
			sep = true
			continue
		case literal(u):
			b.WriteByte(byte(u))
		default:
			escapeUnit(&b, u)
		}
		sep = false
	}
	slug := strings.TrimLeft(b.String(), "-")
	if slug == "" {
		slug = "root"
	}
	if len(slug) > maxSlug { // the slug is ASCII: bytes are code units
		slug = slug[:maxSlug]
	}
	return "--" + slug + "--"
}

// FileName is the file of format generation version (docs/format.md §2.1):
// session.jsonl for v0, session.vN.jsonl after, plus .zstd when compressed.
func FileName(version int, zstd bool) string {
	name := "session.jsonl"
	if version > 0 {
		name = "session.v" + strconv.Itoa(version) + ".jsonl"
	}
	if zstd {
		name += ".zstd"
	}
	return name
}

// ParseFileName reads a generation file name back: its version and
// whether it is compressed. ok is false for any other name.
func ParseFileName(name string) (version int, zstd, ok bool) {
	if rest, found := strings.CutSuffix(name, ".zstd"); found {
		name, zstd = rest, true
	}
	if name == "session.jsonl" {
		return 0, zstd, true
	}
	digits, found := strings.CutPrefix(name, "session.v")
	if !found {
		return 0, false, false
	}
	digits, found = strings.CutSuffix(digits, ".jsonl")
	if !found || digits == "" || len(digits) > 3 {
		return 0, false, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n <= 0 || strconv.Itoa(n) != digits {
		return 0, false, false
	}
	return n, zstd, true
}

// ErrOutsideRoot is returned for a path that would leave the root. The
// escaping makes it unreachable; the check guards against a future change.
var ErrOutsideRoot = errors.New("session path leaves the archive root")

// SessionDir is the directory of session id under root for a session
// whose header has cwd ("" for none).
func SessionDir(root, cwd, id string) (string, error) {
	if id == "" {
		return "", errors.New("empty session id")
	}
	return Within(root, ProjectDir(cwd), EscapeSessionID(id))
}

// ClientsDir is the directory of an archive root that holds, one session
// root each, the sessions of the named clients (docs/operating.md,
// "Sharing a collector"): no project directory takes its name, since a
// project key is made of an absolute cwd.
const ClientsDir = "@clients"

// ClientRoot is the session root of client's sessions in an archive root:
// root itself for no client ("").
func ClientRoot(root, client string) (string, error) {
	if client == "" {
		return root, nil
	}
	return Within(root, ClientsDir, EscapeSessionID(client))
}

// Within joins names under root and checks that the result is a strict
// descendant of root.
func Within(root string, names ...string) (string, error) {
	root = filepath.Clean(root)
	p := filepath.Join(append([]string{root}, names...)...)
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: %q under %q", ErrOutsideRoot, filepath.Join(names...), root)
	}
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.ContainsAny(n, `/\`) || strings.IndexByte(n, 0) >= 0 {
			return "", fmt.Errorf("%w: path segment %q", ErrOutsideRoot, n)
		}
	}
	return p, nil
}

// UnescapeSessionID decodes a session directory name (docs/format.md §2.2):
// each "~XXXX" is one UTF-16 code unit. It reports false when the name is
// not a valid escaped id.
func UnescapeSessionID(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	var units []uint16
	for i := 0; i < len(name); {
		c := name[i]
		if c == '~' {
			if i+5 > len(name) {
				return "", false
			}
			hex := name[i+1 : i+5]
			if strings.ToUpper(hex) != hex {
				return "", false
			}
			n, err := strconv.ParseUint(hex, 16, 16)
			if err != nil {
				return "", false
			}
			units = append(units, uint16(n))
			i += 5
			continue
		}
		if !literal(uint16(c)) {
			return "", false
		}
		units = append(units, uint16(c))
		i++
	}
	return string(utf16.Decode(units)), true
}

// SessionOfFile is the session id a session file's directory name stands
// for (docs/format.md §2.2), or the name itself when it is no valid escape.
func SessionOfFile(path string) string {
	name := filepath.Base(filepath.Dir(path))
	if id, ok := UnescapeSessionID(name); ok {
		return id
	}
	return name
}
