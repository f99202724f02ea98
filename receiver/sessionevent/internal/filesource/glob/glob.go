// Package glob finds the session files the file source's include patterns
// name: "~" and $DSH_HOME expanded, "**" matching any number of
// directories, other segments as path.Match.
package glob

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Expand expands a leading "~" to the home directory and $DSH_HOME (or
// ${DSH_HOME}) to that variable, which defaults to ~/.dsh as in dsh. The
// collector's own ${env:…} expansion has already run; nothing expands "~",
// so the receiver does.
func Expand(p string) string {
	home, _ := os.UserHomeDir()
	dshHome := os.Getenv("DSH_HOME")
	if dshHome == "" && home != "" {
		dshHome = filepath.Join(home, ".dsh")
	}
	p = strings.ReplaceAll(p, "${DSH_HOME}", dshHome)
	p = strings.ReplaceAll(p, "$DSH_HOME", dshHome)
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		p = home + p[1:]
	}
	return filepath.Clean(p)
}

const meta = `*?[\`

// Files returns the regular files matching any of the (expanded)
// patterns, sorted and without repeats.
func Files(patterns []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range patterns {
		split(p).walk(func(name string) {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		})
	}
	slices.Sort(out)
	return out
}

// pattern is a pattern cut where its wildcards begin.
type pattern struct {
	// root is the longest prefix without wildcards: the walk starts there.
	root string
	// rest are the segments below root, matched by matchSegments.
	rest []string
	// deep: a "**" among rest, so the walk may not stop at rest's depth.
	deep bool
}

func split(p string) pattern {
	segs := strings.Split(filepath.ToSlash(p), "/")
	static := 0
	for static < len(segs)-1 && !strings.ContainsAny(segs[static], meta) {
		static++
	}
	root := filepath.FromSlash(strings.Join(segs[:static], "/"))
	if root == "" {
		if strings.HasPrefix(p, "/") {
			root = "/"
		} else {
			root = "."
		}
	}
	return pattern{root: root, rest: segs[static:], deep: slices.Contains(segs[static:], "**")}
}

// walk calls match for every regular file below the pattern's root that
// its segments match. Unreadable directories are skipped.
func (p pattern) walk(match func(name string)) {
	_ = filepath.WalkDir(p.root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && name != p.root {
				return fs.SkipDir // unreadable directory: skip it, keep walking
			}
			return nil
		}
		rel, rerr := filepath.Rel(p.root, name)
		if rerr != nil || rel == "." {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if d.IsDir() {
			if !p.deep && len(parts) >= len(p.rest) {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && matchSegments(p.rest, parts) {
			match(name)
		}
		return nil
	})
}

// matchSegments matches path segments against pattern segments, "**"
// matching zero or more segments.
func matchSegments(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for k := 0; k <= len(parts); k++ {
				if matchSegments(pat[1:], parts[k:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], parts[0]); err != nil || !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}
