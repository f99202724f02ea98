package sessionlog

import "fmt"

// Format is what the decoder knows of the input's dialect and version.
type Format struct {
	// Version is the dsh format version 0–4. Meaningful when Known.
	Version int
	// Known is true once a header or evidence in the events fixed Version.
	Known bool
	// FromHeader is true when Version came from the header line.
	FromHeader bool
	// Seed is true for the simplified seed dialect (docs/format.md §12): no header and
	// seed-only shapes in the events.
	Seed bool
}

// String renders the format for people: "v4", "v0 (inferred)", "seed".
func (f Format) String() string {
	switch {
	case f.Seed:
		return "seed"
	case !f.Known:
		return "unknown (v0 rules)"
	case f.FromHeader:
		return fmt.Sprintf("v%d", f.Version)
	default:
		return fmt.Sprintf("v%d (inferred)", f.Version)
	}
}

// RulesVersion is the version whose rules apply: the known version, else 0
// (docs/format.md §1.2: default to v0 rules; the seed dialect follows v0 rules too).
func (f Format) RulesVersion() int {
	if f.Known && !f.Seed {
		return f.Version
	}
	return 0
}
