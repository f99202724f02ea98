package sessionroot

import (
	"path/filepath"
	"slices"
)

// SelectGenerations keeps, per session directory, only the highest format
// generation (docs/format.md §2.1: dsh opens the highest; a new generation
// holds the whole migrated history); on a tie the zstd file. Paths not
// named like a generation are all kept. The result is sorted.
func SelectGenerations(paths []string) []string {
	type best struct {
		path string
		gen  int
		zstd bool
	}
	bestByDir := map[string]best{}
	var out []string
	for _, p := range paths {
		gen, z, ok := ParseFileName(filepath.Base(p))
		if !ok {
			out = append(out, p)
			continue
		}
		dir := filepath.Dir(p)
		b, seen := bestByDir[dir]
		if !seen || gen > b.gen || gen == b.gen && z && !b.zstd {
			bestByDir[dir] = best{p, gen, z}
		}
	}
	for _, b := range bestByDir {
		out = append(out, b.path)
	}
	slices.Sort(out)
	return out
}
