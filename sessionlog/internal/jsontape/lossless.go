package jsontape

import (
	"fmt"
	"strconv"
)

// MaxSafeInteger is 2^53-1, the largest integer a JavaScript writer keeps
// exactly: lossless JSON has no integer beyond ±MaxSafeInteger.
const MaxSafeInteger = 1<<53 - 1

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
		if err != nil || v > MaxSafeInteger {
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
