package softrnic

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/internal/yamlbound"
)

// ErrInvalidPersonality is matched by errors.Is for every error that
// ParsePersonality and DecodePersonality return because the personality
// file is invalid (as opposed to unreadable).
var ErrInvalidPersonality = errors.New("invalid personality file")

// PersonalityError is one problem in a personality file, at the YAML node
// concerned. The format is documented in docs/personality.md.
type PersonalityError struct {
	// File is the file name given to ParsePersonality or DecodePersonality.
	File string
	// Line and Col locate the offending node (1-based, bytes as yaml.v3
	// counts them).
	Line, Col int
	// Msg describes the problem, without the position.
	Msg string
	// Word, for an unknown key or an unknown name (cnp-scope), is the word as
	// written and Candidates the words allowed there, so that a caller can
	// suggest the closest one (config's validation does). Empty otherwise.
	Word       string
	Candidates []string
	// Err is the sentinel the problem is an instance of, if any
	// (ErrUnknownPersonality for an unknown base).
	Err error
}

// Error returns "FILE:LINE:COL: MSG".
func (e *PersonalityError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Is reports whether target is ErrInvalidPersonality.
func (e *PersonalityError) Is(target error) bool { return target == ErrInvalidPersonality }

// Unwrap returns Err.
func (e *PersonalityError) Unwrap() error { return e.Err }

// PersonalityErrors is every problem found in one personality file, sorted
// by position.
type PersonalityErrors []*PersonalityError

// Error returns one error per line, joined by "\n".
func (l PersonalityErrors) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Is reports whether target is ErrInvalidPersonality.
func (l PersonalityErrors) Is(target error) bool { return target == ErrInvalidPersonality }

// Unwrap returns the errors, so that errors.Is finds their sentinels.
func (l PersonalityErrors) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// durationUnits are the units ParseDuration accepts (time.ParseDuration's).
const durationUnits = "ns, us, µs, ms, s, m, h"

// ParseDuration parses a personality duration: a decimal number with a
// unit and no space ("1.1us", "150us", "0.2s"; units ns, us or µs, ms, s,
// m, h; time.ParseDuration's syntax). Its error quotes the text as written
// and names the units; for "12 us" it suggests "12us".
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	msg := fmt.Sprintf("want a duration: a number and a unit (%s) with no space between, such as 1.1us, 150us or 0.2s; got %s", durationUnits, quoteShort(s))
	if squeezed := strings.Join(strings.Fields(s), ""); squeezed != s {
		if _, err := time.ParseDuration(squeezed); err == nil {
			msg += fmt.Sprintf("; did you mean %q?", squeezed)
		}
	}
	return 0, errors.New(msg)
}

// maxAliasDepth bounds alias chains and nested merge keys (<<).
const maxAliasDepth = 8

// pdecoder decodes a personality document, collecting positioned errors.
type pdecoder struct {
	file string
	errs PersonalityErrors
	// given holds the value node of every key the file gave, by path
	// ("nak-reaction-delay", "adaptive[1]"), to position Validate's errors.
	given map[string]*yaml.Node
}

func (d *pdecoder) errorAt(n *yaml.Node, word string, candidates []string, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, max(n.Column, 1)
	}
	d.errs = append(d.errs, &PersonalityError{File: d.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Word: word, Candidates: candidates})
}

func (d *pdecoder) errorf(n *yaml.Node, format string, args ...any) {
	d.errorAt(n, "", nil, format, args...)
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxAliasDepth {
			return nil
		}
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe says what a node is, for "got X" in messages.
func describe(n *yaml.Node) string {
	switch {
	case n == nil:
		return "an alias chain that is too long"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case isNull(n):
		return "null"
	}
	return quoteShort(n.Value)
}

// quoteShort quotes s for a message, cut after 40 bytes (at a character
// boundary) with "...".
func quoteShort(s string) string {
	if len(s) <= 40 {
		return strconv.Quote(s)
	}
	cut := 40
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

type ppair struct{ key, val *yaml.Node }

// pairs returns the key/value pairs of mapping n with merge keys (<<)
// applied (explicit keys win), reporting duplicate and non-string keys.
func (d *pdecoder) pairs(n *yaml.Node, where string, depth int) []ppair {
	var out, merged []ppair
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		switch {
		case k == nil || k.Kind != yaml.ScalarNode:
			d.errorf(n.Content[i], "keys must be strings, got %s %s", describe(k), where)
		case k.Value == "<<" && k.Tag != "!!str":
			m := deref(v)
			var maps []*yaml.Node
			if m != nil && m.Kind == yaml.SequenceNode {
				for _, e := range m.Content {
					maps = append(maps, deref(e))
				}
			} else {
				maps = []*yaml.Node{m}
			}
			for _, mm := range maps {
				if mm == nil || mm.Kind != yaml.MappingNode || depth >= maxAliasDepth {
					d.errorf(v, "merge key (<<): want a mapping or a list of mappings, got %s", describe(mm))
					continue
				}
				merged = append(merged, d.pairs(mm, where, depth+1)...)
			}
		default:
			if first, dup := seen[k.Value]; dup {
				d.errorf(k, "duplicate key %q %s (first at %d:%d)", k.Value, where, first.Line, first.Column)
				continue
			}
			seen[k.Value] = k
			out = append(out, ppair{k, v})
		}
	}
	for _, p := range merged {
		if _, dup := seen[p.key.Value]; !dup {
			seen[p.key.Value] = p.key
			out = append(out, p)
		}
	}
	return out
}

// yamlKeys returns the yaml key of every field of struct type t, in order,
// and the field index by key.
func yamlKeys(t reflect.Type) ([]string, map[string]int) {
	var keys []string
	idx := map[string]int{}
	for i := range t.NumField() {
		k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if k == "" || k == "-" {
			continue
		}
		keys = append(keys, k)
		idx[k] = i
	}
	return keys, idx
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func wherePath(path string) string {
	if path == "" {
		return "at top level"
	}
	return "in " + path
}

// object decodes mapping n into the struct v, key by key. skip names keys
// the caller handles (base).
func (d *pdecoder) object(n *yaml.Node, v reflect.Value, path string, skip ...string) {
	if n.Kind != yaml.MappingNode {
		name := path
		if name == "" {
			name = "a personality file"
		}
		d.errorf(n, "%s: want a mapping, got %s", name, describe(n))
		return
	}
	keys, idx := yamlKeys(v.Type())
	known := append(slices.Clone(skip), keys...)
	for _, p := range d.pairs(n, wherePath(path), 0) {
		name := p.key.Value
		if slices.Contains(skip, name) {
			continue
		}
		i, ok := idx[name]
		if !ok {
			d.errorAt(p.key, name, known, "unknown key %q %s", name, wherePath(path))
			continue
		}
		kp := joinPath(path, name)
		val := deref(p.val)
		if val == nil {
			d.errorf(p.val, "%s: alias chain too long", name)
			continue
		}
		d.given[kp] = val
		d.value(val, v.Field(i), kp, name)
	}
}

var (
	durationType = reflect.TypeFor[Duration]()
	scopeType    = reflect.TypeFor[CNPScope]()
)

// value decodes node n into f. A null leaves f as the base set it (a
// list: empty).
func (d *pdecoder) value(n *yaml.Node, f reflect.Value, path, name string) {
	if isNull(n) {
		if f.Kind() == reflect.Slice {
			f.SetZero()
		}
		return
	}
	want := func(what string) {
		d.errorf(n, "%s: want %s, got %s", name, what, describe(n))
	}
	switch t := f.Type(); {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			want("a duration such as 1.1us, 150us or 0.2s")
			return
		}
		v, err := ParseDuration(n.Value)
		if err != nil {
			d.errorf(n, "%s: %v", name, err)
			return
		}
		f.SetInt(int64(v))
	case t == scopeType:
		names := make([]string, 0, len(cnpScopeNames))
		for s := CNPPerQP; s <= CNPPerIPPair; s++ {
			names = append(names, s.String())
		}
		for s := CNPPerQP; s <= CNPPerIPPair; s++ {
			if n.Kind == yaml.ScalarNode && n.Value == s.String() {
				f.SetUint(uint64(s))
				return
			}
		}
		word := ""
		if n.Kind == yaml.ScalarNode {
			word = n.Value
		}
		d.errorAt(n, word, names, "%s: want %s, got %s", name, quoteList(names), describe(n))
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			want("a list")
			return
		}
		s := reflect.MakeSlice(t, 0, len(n.Content))
		for i, e := range n.Content {
			ep := fmt.Sprintf("%s[%d]", path, i)
			if e = deref(e); e == nil {
				d.errorf(n.Content[i], "%s: alias chain too long", ep)
				continue
			}
			if isNull(e) && t.Elem().Kind() == reflect.Struct {
				continue // "adaptive: [null]": no stage
			}
			d.given[ep] = e
			ev := reflect.New(t.Elem()).Elem()
			d.value(e, ev, ep, lastElem(ep))
			s = reflect.Append(s, ev)
		}
		f.Set(s)
	case t.Kind() == reflect.Struct:
		d.object(n, f, path)
	default:
		if n.Kind != yaml.ScalarNode {
			want(kindWant(t))
			return
		}
		tmp := reflect.New(t)
		if err := n.Decode(tmp.Interface()); err != nil {
			want(kindWant(t))
			return
		}
		f.Set(tmp.Elem())
	}
}

// lastElem returns "adaptive[1]" of "adaptive[1]" and "intervals[0]" of
// "adaptive[1].intervals[0]".
func lastElem(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// kindWant says what a scalar field of type t takes.
func kindWant(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "an integer"
	case reflect.Uint8:
		return "an integer 0..255"
	case reflect.Float64:
		return "a number"
	}
	return "a string"
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// yamlLineRE matches yaml.v3's "yaml: line N: msg" syntax errors.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// ParsePersonality decodes a personality YAML document (see LoadPersonality
// and docs/personality.md). An invalid document gives a PersonalityErrors
// (matched by errors.Is(err, ErrInvalidPersonality)), each error with
// FILE:LINE:COL.
func ParsePersonality(file string, data []byte) (Personality, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		e := &PersonalityError{File: file, Line: 1, Col: 1, Msg: "YAML syntax error: " + strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = "YAML syntax error: " + m[2]
		}
		return Personality{}, PersonalityErrors{e}
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	return DecodePersonality(file, root)
}

// MaxPersonalityKeys is the largest number of keys in one mapping of a
// personality file (a real one has a few dozen): a file with a larger one
// is refused at the first key beyond the limit, before anything is
// decoded (docs/personality.md).
const MaxPersonalityKeys = 4096

// DecodePersonality decodes the root node of a personality file's YAML
// document (nil or null: an empty file, the spec personality) and
// validates the result. file names the file in errors and gives the
// default name. The keys are Personality's yaml tags and `base`, the
// builtin to start from (default spec); unknown keys, values of the wrong
// type, durations without a unit and out-of-range values are errors, each
// at its node. It returns every error found, as a PersonalityErrors.
func DecodePersonality(file string, root *yaml.Node) (Personality, error) {
	if k := yamlbound.FirstKeyBeyond(root, MaxPersonalityKeys); k != nil {
		return Personality{}, PersonalityErrors{{File: file, Line: k.Line, Col: k.Column,
			Msg: fmt.Sprintf("more than %d keys in one mapping (softrnic.MaxPersonalityKeys); nothing was decoded", MaxPersonalityKeys)}}
	}
	d := &pdecoder{file: file, given: map[string]*yaml.Node{}}
	p := builtins["spec"]
	root = deref(root)
	if root != nil && !isNull(root) {
		if root.Kind == yaml.MappingNode {
			pairs := d.pairs(root, "at top level", 0)
			d.errs = nil // object reports them below
			for _, kv := range pairs {
				if kv.key.Value != "base" {
					continue
				}
				v := deref(kv.val)
				if v != nil && isNull(v) {
					break // no value: the default, spec
				}
				if v == nil || v.Kind != yaml.ScalarNode {
					d.errorf(kv.val, "base: want %s, got %s", quoteList(Personalities()), describe(v))
					break
				}
				b, ok := builtins[strings.ToLower(v.Value)]
				if !ok {
					d.errorf(v, "base: %v %s: want %s", ErrUnknownPersonality, quoteShort(v.Value), quoteList(Personalities()))
					d.errs[len(d.errs)-1].Err = ErrUnknownPersonality
					break
				}
				d.given["base"] = v
				p = b
			}
		}
	}
	p.Adaptive = slices.Clone(p.Adaptive)
	if root != nil && !isNull(root) {
		d.object(root, reflect.ValueOf(&p).Elem(), "", "base")
	}
	if len(p.Adaptive) == 0 {
		p.Adaptive = nil // "adaptive: [null]" decodes to an empty list: none, as when absent
	}
	if p.Name == "" {
		p.Name = strings.TrimSuffix(strings.TrimSuffix(file[strings.LastIndex(file, "/")+1:], ".yaml"), ".yml")
	}
	if len(d.errs) == 0 {
		if err := p.Validate(); err != nil {
			at := root
			var fe *fieldError
			if errors.As(err, &fe) {
				for _, k := range fe.keys {
					if n := d.given[k]; n != nil {
						at = n
						break
					}
				}
				if at == root && d.given["base"] != nil {
					at = d.given["base"]
				}
			}
			d.errorf(at, "%v", err)
		}
	}
	if len(d.errs) > 0 {
		sort.SliceStable(d.errs, func(i, j int) bool {
			a, b := d.errs[i], d.errs[j]
			return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
		})
		return Personality{}, d.errs
	}
	return p, nil
}

// fieldError is a Validate error about the values of keys (the first one
// the file gave locates it).
type fieldError struct {
	keys []string
	msg  string
}

func (e *fieldError) Error() string { return e.msg }

func fieldErrorf(keys []string, format string, args ...any) error {
	return &fieldError{keys, fmt.Sprintf(format, args...)}
}
