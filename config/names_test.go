package config

import (
	"strings"
	"testing"
)

// Issue #38, point 9: a name is printed to the terminal and becomes a
// directory; one with a control character (a test file could set the
// terminal's title, clear the screen, overwrite the status line) or
// anything else unprintable is refused at the value, FILE:LINE:COL.
func TestNameCharacters(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want string // the error, "" for none
	}{
		{name: "ESC", yaml: `name: "a\e]0;pwned\ab"`, want: `t.yaml:1:7: name: want a name of printable characters, got the control character U+001B (ESC) at byte 1 of "a\x1b]0;pwned\ab"`},
		{name: "BEL", yaml: `name: "ab\a"`, want: `t.yaml:1:7: name: want a name of printable characters, got the control character U+0007 (BEL) at byte 2 of "ab\a"`},
		{name: "CR", yaml: `name: "x\ry"`, want: `t.yaml:1:7: name: want a name of printable characters, got the control character U+000D (CR) at byte 1 of "x\ry"`},
		{name: "LF", yaml: `name: "x\ny"`, want: `t.yaml:1:7: name: want a name of printable characters, got the control character U+000A (LF) at byte 1 of "x\ny"`},
		{name: "TAB", yaml: `name: "x\ty"`, want: `t.yaml:1:7: name: want a name of printable characters, got the control character U+0009 (TAB) at byte 1 of "x\ty"`},
		{name: "DEL", yaml: `name: "x\x7f"`, want: `t.yaml:1:7: name: want a name of printable characters, got the control character U+007F (DEL) at byte 1 of "x\x7f"`},
		{name: "C1", yaml: `name: "x\x9b2J"`, want: `t.yaml:1:7: name: want a name of printable characters, got the character U+009B at byte 1 of "x\u009b2J"`},
		{name: "RLO", yaml: "name: \"txt.\u202eexe\"", want: `t.yaml:1:7: name: want a name of printable characters, got the character U+202E at byte 4 of "txt.\u202eexe"`},
		{name: "dump-filename", yaml: "dumpers:\n  - dump-filename: \"d\\e[2J.pcap\"", want: `t.yaml:2:20: dump-filename: want a file name of printable characters, got the control character U+001B (ESC) at byte 1 of "d\x1b[2J.pcap"`},
		{name: "aggregate-pcap-filename", yaml: `aggregate-pcap-filename: "t\n.pcap"`, want: `t.yaml:1:26: aggregate-pcap-filename: want a file name of printable characters, got the control character U+000A (LF) at byte 1 of "t\n.pcap"`},
		{name: "printable", yaml: "name: café-1 (cx5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml+"\n"))
			got := ""
			if err != nil {
				got = strings.TrimSpace(err.Error())
			}
			if got != tc.want {
				t.Errorf("Parse(%q) error =\n%s\nwant\n%s", tc.yaml, got, tc.want)
			}
		})
	}
}

// unsafeNameChar refuses invalid UTF-8, which YAML's parser already does
// for a file's contents.
func TestUnsafeNameCharInvalidUTF8(t *testing.T) {
	if desc, off, bad := unsafeNameChar("ab\xff"); !bad || off != 2 || desc != "the byte 0xff (not UTF-8)" {
		t.Errorf(`unsafeNameChar("ab\xff") = %q, %d, %v, want "the byte 0xff (not UTF-8)", 2, true`, desc, off, bad)
	}
}

// A test without name: is named after its file, unless the file's name
// holds a character a name: may not: then "test".
func TestDefaultNameCharacters(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"dir/a\x1b]0;x\a.yaml", "test"},
		{"line\nbreak.yaml", "test"},
		{"caf\xe9.yaml", "test"},
		{"dir/café-1.yaml", "café-1"},
	} {
		tst, err := Parse(tc.file, []byte("num-repeats: 1\n"))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.file, err)
		}
		if tst.Name != tc.want {
			t.Errorf("Parse(%q).Name = %q, want %q", tc.file, tst.Name, tc.want)
		}
	}
}
