package model

import (
	"strconv"
	"strings"
)

// FormatNs formats a duration in ns with thousands separators, as the
// checks' reasons give intervals and bounds: "67,101,000 ns".
func FormatNs(v int64) string {
	s := strconv.FormatInt(v, 10)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
		s = s[1:]
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	b.WriteString(" ns")
	return b.String()
}

// FormatMicros formats a duration in ns as µs, as the checks' reasons give
// the timestamp uncertainty: "12 µs", "0.5 µs".
func FormatMicros(ns int64) string {
	return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) + " µs"
}
