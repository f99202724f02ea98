package replay

import (
	"html/template"
	"testing"
)

// FuzzEscape holds the page's escaper to html/template's: every value on
// the page is escaped as html/template escapes text.
func FuzzEscape(f *testing.F) {
	for _, s := range append(scanSeeds, "", "plain", `<script>alert('x')</script> & "q"`, "nul\x00byte", "\xff<\xfe") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := template.HTMLEscapeString(s)
		var h hbuf
		h.WriteString("before ")
		h.text(s)
		if got := h.String(); got != "before "+want {
			t.Errorf("text(%q) = %q, want %q", s, got, want)
		}
		h.Reset()
		h.bytes([]byte(s))
		if got := h.String(); got != want {
			t.Errorf("bytes(%q) = %q, want %q", s, got, want)
		}
	})
}
