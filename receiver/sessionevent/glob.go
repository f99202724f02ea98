package sessionevent

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// expandPattern expands a leading "~" to the home directory and $DSH_HOME
// (or ${DSH_HOME}) to that variable, which defaults to ~/.dsh as in dsh.
// The collector's own ${env:…} expansion has already run; nothing expands
// "~", so the receiver does.
func expandPattern(p string) string {
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

const globMeta = `*?[\`

// globFiles returns the regular files matching any of the (expanded)
// patterns, sorted and without repeats. A "**" segment matches any number
// of directories; other segments follow path.Match.
func globFiles(patterns []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range patterns {
		segs := strings.Split(filepath.ToSlash(p), "/")
		// The walk starts at the longest prefix without wildcards.
		static := 0
		for static < len(segs)-1 && !strings.ContainsAny(segs[static], globMeta) {
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
		rest := segs[static:]
		deep := false
		for _, s := range rest {
			if s == "**" {
				deep = true
			}
		}
		_ = filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				if d != nil && d.IsDir() && name != root {
					return fs.SkipDir // unreadable directory: skip it, keep walking
				}
				return nil
			}
			rel, rerr := filepath.Rel(root, name)
			if rerr != nil || rel == "." {
				return nil
			}
			parts := strings.Split(filepath.ToSlash(rel), "/")
			if d.IsDir() {
				if !deep && len(parts) >= len(rest) {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			if matchSegments(rest, parts) && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
			return nil
		})
	}
	slices.Sort(out)
	return out
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
