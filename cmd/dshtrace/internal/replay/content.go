package replay

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Part is one content block of a message (docs/format.md §6.4), as the page shows it.
type Part struct {
	// Type is the block's type: text, reasoning, tool-call (tool_use in the
	// seed dialect), tool-result, tool-addition, tool-removal, image, …
	Type string
	// Text is a text or reasoning block's text; for a block of another
	// type, its JSON.
	Text string
	// ID and Name are a tool call's id and tool, or a tool result's call id
	// (ID) or an addition's tool (Name).
	ID, Name string
	// Args are a tool call's arguments, indented when they are JSON.
	Args string
	// IsError is a tool result's error flag; Inner its content.
	IsError bool
	Inner   []Part
}

// rawBlock is what is read of a block.
type rawBlock struct {
	Type       string  `json:"type"`
	Text       string  `json:"text"`
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	Arguments  rawText `json:"arguments"`
	Input      rawText `json:"input"`
	ToolCallID string  `json:"toolCallId"`
	IsError    bool    `json:"isError"`
	Content    rawText `json:"content"`
	ToolName   string  `json:"toolName"`
	MimeType   string  `json:"mimeType"`
}

// rawText is a value's JSON as written (json.RawMessage, as a string).
type rawText string

// UnmarshalJSON keeps the value's text.
func (t *rawText) UnmarshalJSON(b []byte) error {
	*t = rawText(b)
	return nil
}

// Parts parses a message's content (a JSON array of blocks; a bare string
// is one text block) for display. Content that is neither is one text
// block of itself.
func Parts(content string) []Part {
	if parts, ok := scanParts(content); ok {
		return parts
	}
	return decodeParts(content)
}

// decodeParts is Parts by encoding/json, for any content.
func decodeParts(content string) []Part {
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(content), &raws); err != nil {
		var s string
		if json.Unmarshal([]byte(content), &s) == nil {
			return []Part{{Type: "text", Text: s}}
		}
		return []Part{{Type: "text", Text: content}}
	}
	out := make([]Part, 0, len(raws))
	for _, raw := range raws {
		out = append(out, block(raw))
	}
	return out
}

func block(raw json.RawMessage) Part {
	var b rawBlock
	if err := json.Unmarshal(raw, &b); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return Part{Type: "text", Text: s}
		}
		return Part{Type: "json", Text: Indent(string(raw))}
	}
	return b.part(string(raw))
}

// part is what the page shows of a block read into b (raw its JSON).
func (b *rawBlock) part(raw string) Part {
	switch b.Type {
	case "text", "reasoning":
		return Part{Type: b.Type, Text: b.Text}
	case "tool-call", "tool_use":
		args := b.Arguments
		if len(args) == 0 {
			args = b.Input
		}
		return Part{Type: "tool-call", ID: b.ID, Name: b.Name, Args: arguments(args)}
	case "tool-result":
		inner := Parts(string(b.Content))
		if b.Content == "" {
			inner = nil
		}
		return Part{Type: b.Type, ID: b.ToolCallID, IsError: b.IsError, Inner: inner}
	case "tool-addition", "tool-removal":
		return Part{Type: b.Type, Name: b.ToolName}
	}
	return Part{Type: b.Type, Name: b.MimeType, Text: Indent(raw)}
}

// arguments renders a tool call's arguments: dsh logs them as a JSON
// string holding the model's raw text (perhaps invalid JSON), the seed
// dialect as an object.
func arguments(raw rawText) string {
	if raw == "" {
		return ""
	}
	if raw[0] == '"' {
		sc := newScanner(string(raw))
		if s, ok := sc.str(); ok && sc.end() {
			return Indent(s)
		}
	}
	var s string
	if json.Unmarshal([]byte(raw), &s) == nil {
		return Indent(s)
	}
	return Indent(string(raw))
}

// Indent lays JSON out over lines, two spaces a level; anything that is not
// JSON is returned as it is.
func Indent(s string) string {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return s
	}
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(t), "", "  ") != nil {
		return s
	}
	return buf.String()
}

// Long content is clipped on the page (the rest one click away).
const (
	longBytes = 1600
	longLines = 24
)

// IsLong reports whether text is long enough to be clipped.
func IsLong(s string) bool {
	return len(s) > longBytes || strings.Count(s, "\n") >= longLines
}

// Excerpt is the first line of a message's text (its first text block,
// else its first block of any kind), cut at n characters.
func Excerpt(content string, n int) string {
	// Most messages have a text block, or a tool result holding one: read no
	// more than types and texts.
	text, matched, ok := lightExcerpt(content)
	if !ok {
		text, matched = decodeLight(content)
	}
	if matched {
		return cutLine(text, n)
	}
	return partsExcerpt(content, n)
}

// decodeLight is lightExcerpt by encoding/json, for any content: the
// first text block's text or tool result's first text, when every block
// reads as one.
func decodeLight(content string) (text string, matched bool) {
	type light struct {
		Type, Text string
		Content    []struct{ Type, Text string }
	}
	var bs []light
	if json.Unmarshal([]byte(content), &bs) != nil {
		return "", false
	}
	for _, b := range bs {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
			return b.Text, true
		}
		if b.Type == "tool-result" && len(b.Content) > 0 && b.Content[0].Type == "text" {
			return b.Content[0].Text, true
		}
	}
	return "", false
}

// partsExcerpt is the excerpt of content without a text block or a tool
// result starting with text: its first text, else a tool result's, a tool
// call's or the reasoning.
func partsExcerpt(content string, n int) string {
	bs := Parts(content)
	text := ""
	for _, b := range bs {
		if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
			text = b.Text
			break
		}
	}
	if text == "" {
		for _, b := range bs {
			switch {
			case b.Type == "tool-result" && len(b.Inner) > 0:
				text = b.Inner[0].Text
			case b.Type == "tool-call":
				text = "→ " + b.Name + " " + oneLine(b.Args)
			case b.Type == "reasoning":
				text = "(reasoning) " + b.Text
			}
			if text != "" {
				break
			}
		}
	}
	return cutLine(text, n)
}

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cutLine is cut(oneLine(s), n), folding no more of s than the cut keeps:
// an excerpt of a long text reads its start only.
func cutLine(s string, n int) string {
	b := make([]byte, 0, min(len(s), n+16))
	runes := 0
	space := false // a space is owed before the next word
	for i := 0; i < len(s); {
		w, isSpace := 1, false
		if c := s[i]; c < utf8.RuneSelf {
			isSpace = c == ' ' || c >= '\t' && c <= '\r' // unicode.IsSpace's ASCII
		} else {
			var r rune
			r, w = utf8.DecodeRuneInString(s[i:])
			isSpace = unicode.IsSpace(r)
		}
		switch {
		case isSpace:
			space = len(b) > 0
		default:
			if space {
				b = append(b, ' ')
				runes, space = runes+1, false
			}
			b = append(b, s[i:i+w]...)
			runes++
		}
		i += w
		if runes > n {
			return cut(string(b), n)
		}
	}
	return string(b)
}

// cut shortens s to n characters, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
