package config

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// unsafeNameChar returns a description of the first character of s that
// has no place in a name lumina prints and makes a file or directory of
// (name, dump-filename, aggregate-pcap-filename), and its byte offset; ok
// is false if there is none. Refused: invalid UTF-8 and every character
// that is not printable (unicode.IsPrint: control characters such as ESC,
// BEL, CR, LF and DEL, which a terminal would act on, format characters
// such as U+202E RIGHT-TO-LEFT OVERRIDE, separators other than the ASCII
// space).
func unsafeNameChar(s string) (desc string, off int, ok bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Sprintf("the byte %#02x (not UTF-8)", s[i]), i, true
		case r == 0:
			return "NUL", i, true
		case !unicode.IsPrint(r):
			if c, ok := controlNames[r]; ok {
				return fmt.Sprintf("the control character %U (%s)", r, c), i, true
			}
			return fmt.Sprintf("the character %U", r), i, true
		}
		i += n
	}
	return "", 0, false
}

// controlNames are the control characters a test file is most likely to
// hold by accident or malice.
var controlNames = map[rune]string{
	'\a': "BEL", '\b': "BS", '\t': "TAB", '\n': "LF", '\v': "VT", '\f': "FF", '\r': "CR", 0x1b: "ESC", 0x7f: "DEL",
}

// nameChars fails v if its value holds a character unsafeNameChar
// refuses, naming the character and where it is in the value.
func (d *decoder) nameChars(v *yaml.Node, path, s, what string) bool {
	desc, off, bad := unsafeNameChar(s)
	if !bad {
		return true
	}
	d.fail(v, path, "want %s of printable characters, got %s at byte %d of %s", what, desc, off, describe(v))
	return false
}
