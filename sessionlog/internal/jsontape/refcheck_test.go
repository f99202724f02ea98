package jsontape

// refCheckJSON is the byte-at-a-time checker that Tape.Parse replaced,
// kept as the oracle FuzzCheckJSON holds the tape to: both must report the
// same issues, offsets and messages included.

import "fmt"

// refCheckJSON verifies in one pass, without recursion, that b holds
// exactly one RFC 8259 JSON value nested at most maxDepth deep, one byte
// at a time and recording nothing. UTF-8 is checked by the caller.
//
// It returns the first syntax error and, separately, the first number that
// is not lossless.
func refCheckJSON(b []byte, maxDepth int) (syntax, lossless *Error) {
	// stack holds one byte per open container: '{' or '['.
	var stackBuf [32]byte
	stack := stackBuf[:0]
	i := 0
	n := len(b)
	skipWS := func() {
		for i < n {
			switch b[i] {
			case ' ', '\t', '\n', '\r':
				i++
			default:
				return
			}
		}
	}
	fail := func(msg string) *Error {
		return &Error{Kind: InvalidJSON, Offset: i, Msg: msg}
	}

	// expectValue: at the start of a value. After a value we look at the
	// enclosing container to decide what may follow.
	skipWS()
	if i >= n {
		return fail("empty row"), nil
	}
	for {
		// ---- parse one value at b[i]
		skipWS()
		if i >= n {
			return fail("unexpected end of row, a value is missing"), nil
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return &Error{Kind: TooDeep, Offset: i,
					Msg: fmt.Sprintf("JSON nesting deeper than %d levels", maxDepth)}, lossless
			}
			stack = append(stack, c)
			i++
			skipWS()
			if i < n && (b[i] == '}' && c == '{' || b[i] == ']' && c == '[') {
				stack = stack[:len(stack)-1]
				i++
				goto afterValue
			}
			if c == '{' {
				if err := refScanKey(b, &i, skipWS); err != "" {
					return fail(err), nil
				}
			}
			continue
		case c == '"':
			if err := refScanString(b, &i); err != "" {
				return fail(err), nil
			}
		case c == 't':
			if !hasLit(b, i, "true") {
				return fail("invalid literal"), nil
			}
			i += 4
		case c == 'f':
			if !hasLit(b, i, "false") {
				return fail("invalid literal"), nil
			}
			i += 5
		case c == 'n':
			if !hasLit(b, i, "null") {
				return fail("invalid literal"), nil
			}
			i += 4
		case c == '-' || (c >= '0' && c <= '9'):
			start := i
			end, isInt, err := scanNumber(b, i)
			i = end
			if err != "" {
				return fail(err), nil
			}
			if lossless == nil {
				if msg := numberLossless(b[start:i], isInt); msg != "" {
					lossless = &Error{Kind: NotLossless, Offset: start, Msg: msg}
				}
			}
		default:
			return fail(fmt.Sprintf("unexpected character %q", c)), nil
		}

	afterValue:
		skipWS()
		if len(stack) == 0 {
			if i != n {
				return fail("unexpected data after the JSON value"), nil
			}
			return nil, lossless
		}
		if i >= n {
			return fail("unexpected end of row inside a container"), nil
		}
		top := stack[len(stack)-1]
		switch {
		case b[i] == ',':
			i++
			if top == '{' {
				skipWS()
				if err := refScanKey(b, &i, skipWS); err != "" {
					return fail(err), nil
				}
			}
			continue
		case top == '{' && b[i] == '}', top == '[' && b[i] == ']':
			stack = stack[:len(stack)-1]
			i++
			goto afterValue
		default:
			return fail(fmt.Sprintf("unexpected character %q after a value", b[i])), nil
		}
	}
}

// refScanKey reads `"key" :` at b[*i] (whitespace before the key already skipped).
func refScanKey(b []byte, i *int, skipWS func()) string {
	if *i >= len(b) || b[*i] != '"' {
		return "object key expected"
	}
	if err := refScanString(b, i); err != "" {
		return err
	}
	skipWS()
	if *i >= len(b) || b[*i] != ':' {
		return "':' expected after an object key"
	}
	*i++
	return ""
}

// refScanString reads a string starting at the opening quote.
func refScanString(b []byte, i *int) string {
	j := *i + 1
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			*i = j + 1
			return ""
		case c == '\\':
			if j+1 >= len(b) {
				return "unterminated escape"
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) {
					return "short \\u escape"
				}
				for _, h := range b[j+2 : j+6] {
					if !isHex(h) {
						*i = j
						return "invalid \\u escape"
					}
				}
				j += 6
			default:
				*i = j
				return fmt.Sprintf("invalid escape \\%c", b[j+1])
			}
		case c < 0x20:
			*i = j
			return "control character in string"
		default:
			j++
		}
	}
	*i = j
	return "unterminated string"
}
