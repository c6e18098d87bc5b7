package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Setting is one override of a test file's key, `lumina run --set
// PATH=VALUE` (docs/run.md): PATH names a key by its dotted path from the
// top of the file (`traffic.post-interval-us`), a number in it indexes a
// list (`hosts.1.nic.personality`); VALUE is YAML (`3000`, `true`,
// `{enabled: true}`, `[1, 2]`). The override replaces the key's value, or
// adds the key (and the mappings on its path) when the file lacks it, before
// the file is decoded: the value is checked as if the file had it, and its
// errors point at the key it replaced (or at the mapping it was added to).
type Setting struct {
	Path  string
	Value string
}

// ErrSetting is returned for a malformed --set argument.
var ErrSetting = errors.New("config: bad --set")

// ParseSetting reads "PATH=VALUE".
func ParseSetting(s string) (Setting, error) {
	path, value, ok := strings.Cut(s, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" {
		return Setting{}, fmt.Errorf("%w %q: want PATH=VALUE, e.g. traffic.post-interval-us=3000", ErrSetting, s)
	}
	for _, c := range strings.Split(path, ".") {
		if c == "" {
			return Setting{}, fmt.Errorf("%w %q: empty key in path %q", ErrSetting, s, path)
		}
	}
	return Setting{Path: path, Value: value}, nil
}

// String returns "PATH=VALUE".
func (s Setting) String() string { return s.Path + "=" + s.Value }

// applySettings applies sets to root, the test file's document, in order.
// It returns where each set value now sits (see annotate).
func applySettings(file string, root *yaml.Node, sets []Setting) (map[[2]int]string, ErrorList) {
	var errs ErrorList
	at := map[[2]int]string{}
	for _, s := range sets {
		if n, err := applySetting(root, s); err == nil {
			at[[2]int{n.Line, n.Column}] = s.String()
		} else {
			errs = append(errs, &Error{File: file, Line: max(root.Line, 1), Col: max(root.Column, 1),
				Msg: fmt.Sprintf("--set %s: %v", s, err)})
		}
	}
	return at, errs
}

// annotate names the overrides in the errors of a file checked with sets:
// an error at the position of a set value gets "(--set PATH=VALUE)" (the
// file's line there no longer holds what the error is about), every other
// error "(with --set PATH=VALUE ...)", the overrides it was checked with
// (one may be its cause: a message size that makes an event's psn out of
// range).
func annotate(errs ErrorList, file string, at map[[2]int]string, sets []Setting) {
	if len(sets) == 0 {
		return
	}
	with := make([]string, len(sets))
	for i, s := range sets {
		with[i] = "--set " + s.String()
	}
	all := " (with " + strings.Join(with, " ") + ")"
	for _, e := range errs {
		if s, ok := at[[2]int{e.Line, e.Col}]; ok && e.File == file {
			e.Msg += " (--set " + s + ")"
		} else {
			e.Msg += all
		}
	}
}

// applySetting applies s to root and returns the node it set.
func applySetting(root *yaml.Node, s Setting) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s.Value), &doc); err != nil {
		return nil, fmt.Errorf("value is not YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
	if len(doc.Content) == 1 {
		value = doc.Content[0]
	}
	if hasAlias(value) {
		return nil, errors.New("value may not use YAML anchors or aliases")
	}
	keys := strings.Split(s.Path, ".")
	n := root
	for i, k := range keys {
		n = deref(n)
		last := i == len(keys)-1
		if i > 0 && isNull(n) {
			// `key:` with no value: it becomes the mapping the path needs.
			*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
		}
		switch n.Kind {
		case yaml.MappingNode:
			j := mappingIndex(n, k)
			if j < 0 {
				child := value
				if !last {
					child = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				}
				place(child, n.Line, n.Column)
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k, Line: n.Line, Column: n.Column}, child)
				j = len(n.Content) - 2
			}
			if last {
				old := n.Content[j+1]
				place(value, old.Line, old.Column)
				n.Content[j+1] = value
				return value, nil
			}
			n = n.Content[j+1]
		case yaml.SequenceNode:
			idx, err := strconv.Atoi(k)
			if err != nil || idx < 0 || idx >= len(n.Content) {
				return nil, fmt.Errorf("%s is a list of %d: want an index 0..%d, not %q", strings.Join(keys[:i], "."), len(n.Content), len(n.Content)-1, k)
			}
			if last {
				old := n.Content[idx]
				place(value, old.Line, old.Column)
				n.Content[idx] = value
				return value, nil
			}
			n = n.Content[idx]
		default:
			return nil, fmt.Errorf("%s is %s, not a mapping or list", strings.Join(keys[:i], "."), describe(n))
		}
	}
	return nil, nil
}

// mappingIndex returns the index in n.Content of key k, or -1.
func mappingIndex(n *yaml.Node, k string) int {
	for j := 0; j+1 < len(n.Content); j += 2 {
		if n.Content[j].Value == k {
			return j
		}
	}
	return -1
}

// place gives n and everything under it the position line:col, so that an
// error in the set value points at the key it overrides.
func place(n *yaml.Node, line, col int) {
	n.Line, n.Column = line, col
	for _, c := range n.Content {
		place(c, line, col)
	}
}

func hasAlias(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	for _, c := range n.Content {
		if hasAlias(c) {
			return true
		}
	}
	return false
}
