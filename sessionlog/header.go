package sessionlog

import (
	"fmt"
	"strings"

	"github.com/dshtrace/dshtrace/sessionlog/internal/jsontape"
)

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
			return &UnsupportedVersionError{Line: r.Line, Version: string(vv.Raw())}
		}
		h.Version, h.HasVersion = n, true
	}
	bad := func(msg string) { r.problem(-1, CodeHeaderInvalid, msg) }
	// The header outlives its row (Decoder.Header, RowDecoder.Header): its
	// strings are copies, not views of memory a ReuseRows Decoder or an
	// arena's caller reuses.
	h.ID = strings.Clone(v.GetString("id"))
	if h.ID == "" {
		bad("header needs a non-empty string \"id\"")
	}
	r.SessionID = h.ID
	if n, ok := v.Get("createdAt").SafeInt(); ok {
		h.CreatedAt = n
	} else {
		bad("header needs an integer \"createdAt\"")
	}
	if n, ok := v.Get("delegationDepth").SafeInt(); ok {
		h.DelegationDepth = n
	} else if h.Version >= 2 {
		// Required on disk by the format, but early v0 writers omitted it.
		bad("header needs an integer \"delegationDepth\"")
	}
	h.Cwd = strings.Clone(v.GetString("cwd"))
	h.ParentSession = strings.Clone(v.GetString("parentSession"))
	h.Origin = strings.Clone(v.GetString("origin"))
	h.AgentPreset = strings.Clone(v.GetString("agentPreset"))
	if n, ok := v.Get("seedLength").SafeInt(); ok {
		h.SeedLength, h.HasSeedLength = n, true
	}
	if b := v.Get("isSeeded"); b.Exists() {
		bv, err := b.Bool()
		if err != nil {
			bad("header \"isSeeded\" must be a boolean")
		}
		h.IsSeeded, h.HasIsSeeded = bv, true
	}
	if h.Version >= 2 {
		if !h.HasIsSeeded {
			bad(fmt.Sprintf("a v%d header needs a boolean \"isSeeded\"", h.Version))
		}
		for k := range v.Members() {
			if !headerKeysV2[k] {
				bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
			}
		}
	} else {
		for _, k := range []string{"sandboxMode", "approvalPolicy"} {
			if v.Get(k).Exists() {
				bad(fmt.Sprintf("a v%d header may not carry %q", h.Version, k))
			}
		}
	}
	d.header = h
	d.format = Format{Version: h.Version, Known: true, FromHeader: true}
	return nil
}

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

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("line %d: unsupported session format version %s (this reader reads 0–4)", e.Line, e.Version)
}
