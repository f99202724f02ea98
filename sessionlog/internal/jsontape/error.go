package jsontape

import "fmt"

// Kind says which rule a row breaks.
type Kind uint8

const (
	// InvalidJSON: the row is not exactly one JSON value.
	InvalidJSON Kind = iota
	// InvalidUTF8: a string of the row is not UTF-8 (Parse with checkUTF8).
	InvalidUTF8
	// TooDeep: the row nests deeper than the depth Parse was given.
	TooDeep
	// NotLossless: a number is -0, outside the safe integers ±(2^53-1) or
	// not finite (docs/format.md §4). The row still parses.
	NotLossless
)

// Error is what a row breaks, and where.
type Error struct {
	Kind Kind
	// Offset is the byte of the row the problem is found at.
	Offset int
	// Msg says what is wrong, without the offset.
	Msg string
}

// Error renders the error as `message at byte N`.
func (e *Error) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset) }

// invalidAt is the InvalidJSON error msg at byte off.
func invalidAt(off int, msg string) *Error {
	return &Error{Kind: InvalidJSON, Offset: off, Msg: msg}
}

// unexpected is the error of a byte, b[i], that nothing may start where it
// stands (where says which place, when it is not a value's).
func unexpected(b []byte, i int, where string) *Error {
	return invalidAt(i, fmt.Sprintf("unexpected character %q%s", b[i], where))
}

// tooDeep is the error of a container opened at byte i beyond maxDepth.
func tooDeep(i, maxDepth int) *Error {
	return &Error{Kind: TooDeep, Offset: i, Msg: fmt.Sprintf("JSON nesting deeper than %d levels", maxDepth)}
}

// jsonError is what a Value says when it is not of the type asked for.
type jsonError string

func (e jsonError) Error() string { return string(e) }

const (
	errNotInt    jsonError = "not an integer"
	errNotBool   jsonError = "not a boolean"
	errNotNumber jsonError = "not a number"
)
