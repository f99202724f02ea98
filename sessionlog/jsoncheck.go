package sessionlog

import (
	"fmt"
	"strconv"
)

// jsonIssue is what checkJSON found wrong with a row: a syntax problem
// (the row cannot be decoded) or a lossless-JSON problem (docs/format.md §4:
// no -0, no non-safe integers, no non-finite numbers), which is a violation
// but leaves the row decodable.
type jsonIssue struct {
	code   string
	offset int
	msg    string
}

// maxSafeInteger is 2^53-1, the largest integer a JavaScript writer keeps exactly.
const maxSafeInteger = 1<<53 - 1

// checkJSON verifies that b holds exactly one RFC 8259 JSON value nested at
// most maxDepth deep: the checking half of tape.parse, for callers that
// need no nodes. It returns the first syntax issue (fatal for the row) and,
// separately, the first lossless issue (a violation only). UTF-8 is
// checked by the caller.
func checkJSON(b []byte, maxDepth int) (syntax, lossless *jsonIssue) {
	t := getTape()
	defer putTape(t)
	return t.parse(b, maxDepth, false)
}

func hasLit(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber reads a JSON number and reports whether it has neither a
// fraction nor an exponent.
func scanNumber(b []byte, i *int) (isInt bool, err string) {
	j := *i
	if b[j] == '-' {
		j++
	}
	if j >= len(b) || b[j] < '0' || b[j] > '9' {
		*i = j
		return false, "invalid number"
	}
	if b[j] == '0' {
		j++
	} else {
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
	}
	isInt = true
	if j < len(b) && b[j] == '.' {
		isInt = false
		j++
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			*i = j
			return false, "invalid number: digits expected after '.'"
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		isInt = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		if j == k {
			*i = j
			return false, "invalid number: digits expected in exponent"
		}
	}
	*i = j
	return isInt, ""
}

// numberLossless says what is wrong, if anything, with a number under dsh's
// lossless-JSON rule.
func numberLossless(num []byte, isInt bool) string {
	neg := num[0] == '-'
	if isInt {
		digits := num
		if neg {
			digits = num[1:]
		}
		if len(digits) == 1 && digits[0] == '0' {
			if neg {
				return "-0 is not lossless JSON"
			}
			return ""
		}
		if len(digits) < 16 {
			return ""
		}
		v, err := strconv.ParseUint(string(digits), 10, 64)
		if err != nil || v > maxSafeInteger {
			return fmt.Sprintf("integer %s is outside the safe range ±(2^53-1)", num)
		}
		return ""
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil {
		return fmt.Sprintf("number %s is not finite", num)
	}
	if f == 0 && neg {
		return fmt.Sprintf("%s is -0, not lossless JSON", num)
	}
	return ""
}
