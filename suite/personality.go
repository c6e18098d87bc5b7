package suite

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// ErrNoPersonality: a test file sets no requester or responder
// nic.personality to replace.
var ErrNoPersonality = errors.New("suite: no nic.personality to replace")

// SetPersonality returns the test file data with the value of the
// requester's and the responder's nic.personality replaced by name. The
// rest of the file — comments, layout, flow style — is kept byte for
// byte, so a suite written for one NIC model can be derived for another
// (examples/regression/cx4 and cx6 are derived from cx5 this way). Both
// hosts must set the key.
func SetPersonality(data []byte, name string) ([]byte, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("suite: a test file is a YAML mapping")
	}
	var vals []*yaml.Node
	for _, host := range []string{"requester", "responder"} {
		v := lookupPath(root.Content[0], host, "nic", "personality")
		if v == nil || v.Kind != yaml.ScalarNode || v.Style != 0 {
			return nil, fmt.Errorf("%w: %s.nic.personality (an unquoted scalar)", ErrNoPersonality, host)
		}
		vals = append(vals, v)
	}
	// Replace from the end so earlier offsets stay valid.
	lines := bytes.SplitAfter(data, []byte("\n"))
	sort.Slice(vals, func(i, j int) bool {
		if vals[i].Line != vals[j].Line {
			return vals[i].Line > vals[j].Line
		}
		return vals[i].Column > vals[j].Column
	})
	for _, v := range vals {
		ln := lines[v.Line-1]
		col := byteOffset(ln, v.Column-1)
		if !bytes.HasPrefix(ln[col:], []byte(v.Value)) {
			return nil, fmt.Errorf("suite: line %d: personality %q not where the parser put it", v.Line, v.Value)
		}
		out := append([]byte{}, ln[:col]...)
		out = append(out, name...)
		lines[v.Line-1] = append(out, ln[col+len(v.Value):]...)
	}
	return bytes.Join(lines, nil), nil
}

// byteOffset converts a 0-based rune column into a byte offset.
func byteOffset(line []byte, col int) int {
	off := 0
	for i := 0; i < col && off < len(line); i++ {
		_, n := utf8.DecodeRune(line[off:])
		off += n
	}
	return off
}

func lookupPath(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}
