package sessionlog

import (
	"fmt"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

// decodeHeader reads the header line (docs/format.md §3), which fixes the
// stream's format. A version this decoder does not read is the only
// error; every other flaw is a problem of the row.
func (d *RowDecoder) decodeHeader(r *Row, v jsontape.Value) error {
	r.Kind = RowHeader
	h := &Header{}
	r.Header = h
	if d.rows != 1 {
		r.problem(-1, CodeHeaderMisplaced, "a session header may only be the first row")
	}
	if vv := v.Get("version"); vv.Exists() {
		n, err := vv.Int()
		if err != nil || n < 0 || n > 4 {
			return &UnsupportedVersionError{Line: r.Line, Version: vv.Raw()}
		}
		h.Version, h.HasVersion = n, true
	}
	bad := func(msg string) { r.problem(-1, CodeHeaderInvalid, msg) }
	h.read(v, bad)
	h.checkKeys(v, bad)
	r.SessionID = h.ID
	d.header = h
	d.format = Format{Version: h.Version, Known: true, FromHeader: true}
	return nil
}

// read reads the header's fields from v, its version known, and tells bad
// what is missing or mistyped. The header outlives its row
// (Decoder.Header, RowDecoder.Header): its strings are copies, not views
// of memory a ReuseRows Decoder or an arena's caller reuses.
func (h *Header) read(v jsontape.Value, bad func(msg string)) {
	if h.ID = strings.Clone(v.GetString("id")); h.ID == "" {
		bad("header needs a non-empty string \"id\"")
	}
	var ok bool
	if h.CreatedAt, ok = v.Get("createdAt").SafeInt(); !ok {
		bad("header needs an integer \"createdAt\"")
	}
	// Required on disk by the format, but early v0 writers omitted it.
	if h.DelegationDepth, ok = v.Get("delegationDepth").SafeInt(); !ok && h.Version >= 2 {
		bad("header needs an integer \"delegationDepth\"")
	}
	h.Cwd = strings.Clone(v.GetString("cwd"))
	h.ParentSession = strings.Clone(v.GetString("parentSession"))
	h.Origin = strings.Clone(v.GetString("origin"))
	h.AgentPreset = strings.Clone(v.GetString("agentPreset"))
	h.SeedLength, h.HasSeedLength = v.Get("seedLength").SafeInt()
	if b := v.Get("isSeeded"); b.Exists() {
		bv, err := b.Bool()
		if err != nil {
			bad("header \"isSeeded\" must be a boolean")
		}
		h.IsSeeded, h.HasIsSeeded = bv, true
	}
}

// checkKeys holds the header's keys to its version: from v2 on a closed
// set, with isSeeded required; before, no sandboxMode or approvalPolicy.
func (h *Header) checkKeys(v jsontape.Value, bad func(msg string)) {
	if h.Version < 2 {
		for _, k := range []string{"sandboxMode", "approvalPolicy"} {
			if v.Get(k).Exists() {
				bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
			}
		}
		return
	}
	if !h.HasIsSeeded {
		bad(fmt.Sprintf("a v%d header needs a boolean \"isSeeded\"", h.Version))
	}
	for k := range v.Members() {
		if !headerKeysV2[k] {
			bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
		}
	}
}

// headerKeysV2 are the keys a v2+ header may carry.
var headerKeysV2 = map[string]bool{
	"type": true, "version": true, "id": true, "createdAt": true, "isSeeded": true,
	"delegationDepth": true, "cwd": true, "parentSession": true, "origin": true, "agentPreset": true,
}

// UnsupportedVersionError is returned for a header whose version this
// decoder does not read. It is not corruption: a newer writer made the file.
type UnsupportedVersionError struct {
	Line    int
	Version string
}

// Error names the line and the version read there.
func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("line %d: unsupported session format version %s (this reader reads 0–4)", e.Line, e.Version)
}
