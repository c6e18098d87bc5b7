package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/roce"
)

// maxCollected bounds the errors kept while decoding; finish trims the
// list to maxErrors.
const maxCollected = 1000

// maxMergeDepth bounds nested YAML merge keys (<<) and alias chains.
const maxMergeDepth = 8

// maxMerged bounds the keys that merge keys may pull in over a whole file,
// so that nested merges of aliases cannot blow up exponentially.
const maxMerged = 10000

// decoder walks a yaml.Node tree into a Test, collecting positioned errors.
type decoder struct {
	file string
	errs ErrorList
	// warns are warnings found while checking (LoadOptions.Warn receives
	// them when the file is valid).
	warns []Error
	seen  map[string]bool // "line:col:msg" of errors already reported

	// nodes and keys hold the value and key node of every known key that
	// was given, by dotted path ("traffic.mtu",
	// "traffic.data-pkt-events[2].psn"); null values are included.
	nodes map[string]*yaml.Node
	keys  map[string]*yaml.Node
	// bad holds the paths whose value was rejected, so that checks that
	// depend on them are skipped instead of cascading.
	bad map[string]bool

	// What the file said, for resolve and validate.
	mirrors      []string // "requester-mirror" and/or "responder-mirror", as given
	dumpersGiven bool
	evOK         map[string][]bool // per data-pkt-events path, per entry: decoded without error

	merged int // keys pulled in by merge keys so far, against maxMerged
}

func newDecoder(file string) *decoder {
	return &decoder{
		file:  file,
		seen:  map[string]bool{},
		nodes: map[string]*yaml.Node{},
		keys:  map[string]*yaml.Node{},
		bad:   map[string]bool{},
		evOK:  map[string][]bool{},
	}
}

// errorf records an error at node n (at 1:1 if n is nil or has no position).
func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	line, col := 1, 1
	if n != nil && n.Line > 0 {
		line, col = n.Line, max(n.Column, 1)
	}
	d.errorAt(Pos{line, col}, fmt.Sprintf(format, args...))
}

// warnAt records a warning at p (msg starts with "warning: ").
func (d *decoder) warnAt(p Pos, msg string) {
	if p.Line <= 0 {
		p = Pos{1, 1}
	}
	d.warns = append(d.warns, Error{File: d.file, Line: p.Line, Col: p.Col, Msg: msg})
}

func (d *decoder) errorAt(p Pos, msg string) {
	if p.Line <= 0 {
		p = Pos{1, 1}
	}
	k := p.String() + ":" + msg
	if d.seen[k] || len(d.errs) >= maxCollected {
		return
	}
	d.seen[k] = true
	d.errs = append(d.errs, &Error{File: d.file, Line: p.Line, Col: p.Col, Msg: msg})
}

// given reports whether the file gave path a non-null value.
func (d *decoder) given(path string) bool {
	n := d.nodes[path]
	return n != nil && !isNull(n)
}

// pos returns the position of the value at path, or of its key, or the zero Pos.
func (d *decoder) pos(path string) Pos {
	if n := d.nodes[path]; n != nil && n.Line > 0 {
		return Pos{n.Line, n.Column}
	}
	if n := d.keys[path]; n != nil && n.Line > 0 {
		return Pos{n.Line, n.Column}
	}
	return Pos{}
}

// deref follows alias nodes.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxMergeDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isMergeKey(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "<<" && (n.Tag == "" || n.Tag == "!" || n.ShortTag() == "!!merge")
}

// describe says what a node is, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	if n == nil {
		return "an alias chain that is too long"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if isNull(n) {
			return "null"
		}
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return strconv.Quote(v)
	}
	return "an unknown node"
}

// parentPath returns path without its last element: "traffic.mtu" gives
// "traffic", "flows[2].mtu" gives "flows[2]", "mtu" gives "".
func parentPath(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// lastKey returns the last element of a dotted path, for messages:
// "traffic.mtu" gives "mtu", "dumpers[1]" gives "dumpers[1]".
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return "at top level"
	}
	return "in " + path
}

type pair struct {
	key, val *yaml.Node
	name     string
}

// pairs returns the key/value pairs of mapping n, with merge keys (<<)
// applied (explicit keys win) and duplicate keys reported.
func (d *decoder) pairs(n *yaml.Node, path string, depth int) []pair {
	var out []pair
	seen := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kd := deref(k)
		if kd == nil || kd.Kind != yaml.ScalarNode {
			d.errorf(k, "keys must be strings, got %s %s", describe(kd), where(path))
			continue
		}
		if isMergeKey(kd) {
			merges = append(merges, v)
			continue
		}
		if first, dup := seen[kd.Value]; dup {
			d.errorf(k, "duplicate key %q %s (first at %d:%d)", kd.Value, where(path), first.Line, first.Column)
			continue
		}
		seen[kd.Value] = k
		out = append(out, pair{k, v, kd.Value})
	}
	for _, m := range merges {
		md := deref(m)
		var maps []*yaml.Node
		switch {
		case md != nil && md.Kind == yaml.MappingNode:
			maps = []*yaml.Node{md}
		case md != nil && md.Kind == yaml.SequenceNode:
			for _, e := range md.Content {
				maps = append(maps, deref(e))
			}
		default:
			d.errorf(m, "merge key (<<): want a mapping or a list of mappings, got %s", describe(md))
			continue
		}
		for _, mm := range maps {
			if mm == nil || mm.Kind != yaml.MappingNode {
				d.errorf(m, "merge key (<<): want a mapping or a list of mappings, got a list holding %s", describe(mm))
				continue
			}
			if depth >= maxMergeDepth {
				d.errorf(m, "merge keys (<<) nested too deeply")
				continue
			}
			d.merged += len(mm.Content) / 2
			if d.merged > maxMerged {
				d.errorf(m, "merge keys (<<) expand to more than %d keys", maxMerged)
				continue
			}
			for _, p := range d.pairs(mm, path, depth+1) {
				if _, dup := seen[p.name]; dup {
					continue
				}
				seen[p.name] = p.key
				out = append(out, p)
			}
		}
	}
	return out
}

// object checks that n is a mapping whose keys are all in known, records
// the nodes of its keys under path, and returns the non-null values by key.
// It returns nil (after reporting) if n is not a mapping.
func (d *decoder) object(n *yaml.Node, path string, known []string) map[string]*yaml.Node {
	nd := deref(n)
	if nd == nil || nd.Kind != yaml.MappingNode {
		name := lastKey(path)
		if name == "" {
			name = "top level"
		}
		d.errorf(n, "%s: want a mapping, got %s", name, describe(nd))
		d.bad[path] = true
		return nil
	}
	m := map[string]*yaml.Node{}
	for _, p := range d.pairs(nd, path, 0) {
		if !slices.Contains(known, p.name) {
			if path == "" && strings.HasPrefix(p.name, "x-") {
				continue // extension keys: a place to hold YAML anchors
			}
			msg := fmt.Sprintf("unknown key %q %s", p.name, where(path))
			if s := suggest(p.name, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			d.errorf(p.key, "%s", msg)
			continue
		}
		kp := join(path, p.name)
		v := deref(p.val)
		d.keys[kp] = p.key
		if v == nil {
			d.errorf(p.val, "%s: alias chain too long", p.name)
			d.bad[kp] = true
			continue
		}
		d.nodes[kp] = v
		if !isNull(v) {
			m[p.name] = v
		}
	}
	return m
}

// fail reports a rejected value and marks its path bad.
func (d *decoder) fail(v *yaml.Node, path, format string, args ...any) {
	d.errorf(v, "%s: %s", lastKey(path), fmt.Sprintf(format, args...))
	d.bad[path] = true
}

// scalar returns v's text, or reports "want <want>".
func (d *decoder) scalar(v *yaml.Node, path, want string) (string, bool) {
	if v.Kind != yaml.ScalarNode {
		d.fail(v, path, "want %s, got %s", want, describe(v))
		return "", false
	}
	return v.Value, true
}

// parseUint parses an unsigned YAML integer: decimal (leading zeros do not
// make it octal), or 0x, 0o or 0b followed by digits.
func parseUint(body string) (uint64, error) {
	base := 10
	if len(body) > 2 && body[0] == '0' {
		switch body[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 10 {
			body = body[2:]
		}
	}
	if body == "" || strings.ContainsAny(body, "+-_") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseUint(body, base, 64)
}

// parseInt parses a YAML integer: parseUint's forms with an optional sign.
func parseInt(s string) (int64, error) {
	body := strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(body, "-") || strings.HasPrefix(body, "+") {
		neg = body[0] == '-'
		body = body[1:]
	}
	u, err := parseUint(body)
	if err != nil {
		return 0, err
	}
	if neg {
		if u > 1<<63 {
			return 0, strconv.ErrRange
		}
		return -int64(u), nil
	}
	if u > math.MaxInt64 {
		return 0, strconv.ErrRange
	}
	return int64(u), nil
}

// intVal decodes an integer.
func (d *decoder) intVal(v *yaml.Node, path string) (int, bool) {
	s, ok := d.scalar(v, path, "an integer")
	if !ok {
		return 0, false
	}
	i, err := parseInt(s)
	if err != nil || i < math.MinInt || i > math.MaxInt {
		if err == nil || errors.Is(err, strconv.ErrRange) {
			d.fail(v, path, "integer %s out of range", s)
		} else {
			d.fail(v, path, "want an integer, got %s", describe(v))
		}
		return 0, false
	}
	return int(i), true
}

// intIn decodes an integer in lo..hi into *dst. hint, if not empty, is
// appended to the range error.
func (d *decoder) intIn(v *yaml.Node, path string, dst *int, lo, hi int, hint string) bool {
	i, ok := d.intVal(v, path)
	if !ok {
		return false
	}
	if i < lo || i > hi {
		var want string
		switch {
		case hi == math.MaxInt:
			want = fmt.Sprintf("an integer >= %d", lo)
		default:
			want = fmt.Sprintf("%d..%d", lo, hi)
		}
		msg := fmt.Sprintf("want %s, got %d", want, i)
		if hint != "" {
			msg += " " + hint
		}
		d.fail(v, path, "%s", msg)
		return false
	}
	*dst = i
	return true
}

// boolVal decodes a boolean (true/false in any case, and YAML 1.1's
// yes/no/on/off, which the public tool's PyYAML accepts).
func (d *decoder) boolVal(v *yaml.Node, path string, dst *bool) bool {
	s, ok := d.scalar(v, path, "a boolean (true or false)")
	if !ok {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "yes", "on":
		*dst = true
	case "false", "no", "off":
		*dst = false
	default:
		d.fail(v, path, "want a boolean (true or false), got %s", describe(v))
		return false
	}
	return true
}

// strVal decodes a string.
func (d *decoder) strVal(v *yaml.Node, path string, dst *string) bool {
	s, ok := d.scalar(v, path, "a string")
	if ok {
		*dst = s
	}
	return ok
}

// nonEmpty decodes a non-empty string.
func (d *decoder) nonEmpty(v *yaml.Node, path string, dst *string) bool {
	var s string
	if !d.strVal(v, path, &s) {
		return false
	}
	if s == "" {
		d.fail(v, path, "must not be empty")
		return false
	}
	*dst = s
	return true
}

// enum decodes one of names (case-insensitively) and returns its index.
func (d *decoder) enum(v *yaml.Node, path string, names []string) (int, bool) {
	want := quoteList(names)
	s, ok := d.scalar(v, path, want)
	if !ok {
		return 0, false
	}
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return i, true
		}
	}
	msg := fmt.Sprintf("want %s, got %s", want, describe(v))
	if sug := suggest(s, names); sug != "" {
		msg += fmt.Sprintf("; did you mean %q?", sug)
	}
	d.fail(v, path, "%s", msg)
	return 0, false
}

// quoteList renders names as `a, b or c`.
func quoteList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// seq checks that v is a list and returns its (dereferenced) elements.
func (d *decoder) seq(v *yaml.Node, path string) ([]*yaml.Node, bool) {
	if v.Kind != yaml.SequenceNode {
		d.fail(v, path, "want a list, got %s", describe(v))
		return nil, false
	}
	out := make([]*yaml.Node, len(v.Content))
	for i, e := range v.Content {
		out[i] = deref(e)
		if out[i] == nil {
			d.fail(e, path, "alias chain too long")
			return nil, false
		}
	}
	return out, true
}

// strList decodes a list of strings.
func (d *decoder) strList(v *yaml.Node, path string) ([]string, bool) {
	elems, ok := d.seq(v, path)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		var s string
		if !d.strVal(e, fmt.Sprintf("%s[%d]", path, i), &s) {
			d.bad[path] = true
			continue
		}
		out = append(out, s)
	}
	return out, !d.bad[path]
}

// fileName decodes a non-empty file name without a directory.
func (d *decoder) fileName(v *yaml.Node, path string, dst *string) bool {
	var s string
	if !d.nonEmpty(v, path, &s) {
		return false
	}
	if strings.ContainsAny(s, `/\`) || s == "." || s == ".." {
		d.fail(v, path, "want a file name without a directory, got %s", describe(v))
		return false
	}
	if strings.ContainsRune(s, 0) {
		d.fail(v, path, "want a file name without NUL, got %s", describe(v))
		return false
	}
	if !d.nameChars(v, path, s, "a file name") {
		return false
	}
	*dst = s
	return true
}

// pathComponent reports whether s can be used as one component of a path
// on every platform: not empty, not "." or "..", without '/', '\' or NUL.
func pathComponent(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

func validName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return s != "." && s != ".."
}

// test decodes the whole file, as the schema's top-level section.
func (d *decoder) test(root *yaml.Node) *Test {
	t := &Test{File: d.file}
	s := reflect.ValueOf(t).Elem()
	setDefaults(topSection, s)
	if !d.section(root, "", topSection, s) {
		return nil
	}
	return t
}

// newDumper returns a dumper with the schema's defaults.
func newDumper(name string) Dumper {
	dm := Dumper{Name: name}
	setDefaults(dumperSection, reflect.ValueOf(&dm).Elem())
	return dm
}

// --- values: the decodeFuncs of the schema ----------------------------------

const inf = math.MaxInt // no upper bound, for ints

var (
	portSpeeds           = []string{"NONE", "1G", "10G", "25G", "40G", "50G", "100G", "200G", "400G"}
	fecTypes             = []string{"NONE", "FC", "RS"}
	hostNICTypes         = []string{"cx4", "cx5", "cx6", "e810"}
	dumperNICTypes       = []string{"cx4", "cx5", "cx6", "e810", "xl710"}
	builtinPersonalities = []string{"spec", "cx4", "cx5", "cx6"}
	eventTypeNames       = []string{"drop", "ecn", "corrupt", "bit-error", "delay", "reorder", "duplicate"}
)

// ints decodes an integer in lo..hi; hint, if not empty, follows a range
// error.
func ints(lo, hi int, hint string) decodeFunc {
	return func(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
		var i int
		if d.intIn(v, path, &i, lo, hi, hint) {
			f.SetInt(int64(i))
		}
	}
}

// oneOf decodes one of names, in any case, into a string (spelled as in
// names) or an enumeration (the index in names).
func oneOf(names []string) decodeFunc {
	return func(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
		if i, ok := d.enum(v, path, names); ok && f.Kind() == reflect.String {
			f.SetString(names[i])
		} else if ok {
			f.SetInt(int64(i))
		}
	}
}

func decStr(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	d.strVal(v, path, ptr[string](f))
}

// decTestName decodes the test name, which becomes a directory of the
// results (<out>/<name>/...): one path component.
func decTestName(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	var s string
	if !d.nonEmpty(v, path, &s) {
		return
	}
	if !pathComponent(s) {
		d.fail(v, path, "want a name without '/', '\\', NUL, \".\" or \"..\", got %s", describe(v))
		return
	}
	if !d.nameChars(v, path, s, "a name") {
		return
	}
	f.SetString(s)
}

// decPath decodes a directory path (result-path): not empty, no NUL.
func decPath(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	var s string
	if !d.nonEmpty(v, path, &s) {
		return
	}
	if strings.ContainsRune(s, 0) {
		d.fail(v, path, "want a path without NUL, got %s", describe(v))
		return
	}
	f.SetString(s)
}

func decFile(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	d.fileName(v, path, ptr[string](f))
}

func decBool(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	d.boolVal(v, path, ptr[bool](f))
}

func decSeed(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	if s, ok := d.scalar(v, path, "an unsigned integer"); ok {
		if u, err := parseUint(strings.TrimPrefix(strings.TrimSpace(s), "+")); err != nil {
			d.fail(v, path, "want an unsigned 64-bit integer, got %s", describe(v))
		} else {
			f.SetUint(u)
		}
	}
}

func decRewritePort(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	var p int
	if !d.intIn(v, path, &p, 1, 65535, "") {
		return
	}
	if p == roceUDPPort {
		d.fail(v, path, "must not be 4791, the RoCEv2 port: dumpers could not tell mirrored copies from live traffic")
	} else {
		f.SetInt(int64(p))
	}
}

// decMirror decodes requester-mirror or responder-mirror into a dumper.
func decMirror(d *decoder, v *yaml.Node, path string, _, s reflect.Value) {
	d.mirrors = append(d.mirrors, path)
	dm := newDumper(path)
	d.section(v, path, mirrorSection, reflect.ValueOf(&dm).Elem())
	t := ptr[Test](s)
	t.Dumpers = append(t.Dumpers, dm)
}

func decDumpers(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	d.dumpersGiven = true
	if len(d.mirrors) > 0 {
		d.errorf(d.keys[path], "dumpers and %s are mutually exclusive: use dumpers, or the public tool's requester-mirror and responder-mirror", strings.Join(d.mirrors, "/"))
		d.bad[path] = true
		return
	}
	elems, ok := d.seq(v, path)
	if !ok {
		return
	}
	if len(elems) == 0 || len(elems) > maxDumpers {
		d.fail(v, path, "want 1..%d dumpers, got %d", maxDumpers, len(elems))
		if len(elems) > maxDumpers {
			elems = elems[:maxDumpers]
		}
	}
	dumpers := ptr[[]Dumper](f)
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		dm := newDumper(fmt.Sprintf("dumper-%d", i))
		d.nodes[p] = e
		d.section(e, p, dumperSection, reflect.ValueOf(&dm).Elem())
		*dumpers = append(*dumpers, dm)
	}
}

func decDumperName(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	var s string
	if !d.nonEmpty(v, path, &s) {
		return
	}
	if !validName(s) {
		d.fail(v, path, "want letters, digits, '.', '_' or '-', got %s", describe(v))
	} else {
		f.SetString(s)
	}
}

func decEALArgs(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	if l, ok := d.strList(v, path); ok && len(l) > 0 {
		f.Set(reflect.ValueOf(l))
	}
}

func decHostNICType(d *decoder, v *yaml.Node, path string, f, s reflect.Value) {
	if t, ok := d.scalar(v, path, quoteList(hostNICTypes)); !ok {
		return
	} else if strings.EqualFold(t, "xl710") {
		d.fail(v, path, "xl710 has no RDMA support: it is allowed on dumpers (mirrors) only; want %s", quoteList(hostNICTypes))
	} else {
		oneOf(hostNICTypes)(d, v, path, f, s)
	}
}

func decPersonality(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	var s string
	if !d.nonEmpty(v, path, &s) {
		return
	}
	low := strings.ToLower(s)
	switch {
	case slices.Contains(builtinPersonalities, low):
		f.SetString(low)
	case strings.HasSuffix(low, ".yaml") || strings.HasSuffix(low, ".yml"):
		f.SetString(s)
	default:
		msg := fmt.Sprintf("want %s, or the path of a .yaml/.yml file, got %s", quoteList(builtinPersonalities), describe(v))
		if sug := suggest(s, builtinPersonalities); sug != "" {
			msg += fmt.Sprintf("; did you mean %q?", sug)
		}
		d.fail(v, path, "%s", msg)
	}
}

func decIPList(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	elems, _ := d.seq(v, path)
	list := ptr[[]netip.Prefix](f)
	for i, e := range elems {
		ep := fmt.Sprintf("%s[%d]", path, i)
		var s string
		if !d.strVal(e, ep, &s) {
			continue
		}
		var p netip.Prefix
		var err error
		if strings.Contains(s, "/") {
			p, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			a, err = netip.ParseAddr(s)
			if err == nil {
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil || !p.Addr().Is4() {
			d.fail(e, ep, "want an IPv4 address or CIDR prefix such as 10.0.0.2/24, got %s", describe(e))
			continue
		}
		*list = append(*list, p)
	}
}

func decPrioDSCPMap(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	if v.Kind != yaml.MappingNode {
		d.fail(v, path, "want a mapping from priority (0..7) to DSCP values such as \"8,9,10\", got %s", describe(v))
		return
	}
	pm := ptr[map[int][]int](f)
	for _, p := range d.pairs(v, path, 0) {
		prio, err := parseInt(p.name)
		if err != nil || prio < 0 || prio > 7 {
			d.errorf(p.key, "prio-dscp-map: want a priority 0..7 as key, got %q", p.name)
			continue
		}
		val := deref(p.val)
		if val == nil || (val.Kind != yaml.ScalarNode && val.Kind != yaml.SequenceNode) || isNull(val) {
			d.errorf(p.val, "prio-dscp-map: want DSCP values such as \"8,9,10\" or a list, got %s", describe(val))
			continue
		}
		var parts []string
		var nodes []*yaml.Node
		if val.Kind == yaml.ScalarNode {
			for _, f := range strings.Split(val.Value, ",") {
				parts = append(parts, strings.TrimSpace(f))
				nodes = append(nodes, val)
			}
		} else {
			for _, e := range val.Content {
				e = deref(e)
				if e == nil || e.Kind != yaml.ScalarNode {
					d.errorf(p.val, "prio-dscp-map: want DSCP values 0..63, got %s", describe(e))
					continue
				}
				parts = append(parts, e.Value)
				nodes = append(nodes, e)
			}
		}
		var dscps []int
		for i, s := range parts {
			x, err := parseInt(s)
			if err != nil || x < 0 || x > 63 {
				d.errorf(nodes[i], "prio-dscp-map: want DSCP values 0..63, got %q", s)
				continue
			}
			dscps = append(dscps, int(x))
		}
		if *pm == nil {
			*pm = map[int][]int{}
		}
		(*pm)[int(prio)] = dscps
	}
}

// decNumQPs decodes num-qps, or the paper's num-connections: an integer,
// or "a,b" with rdma-verb send_read. It needs the verb, so it decodes
// rdma-verb first (its own row decodes it again, which reports nothing
// new). Without either key, resolve fills in the send_read default.
func decNumQPs(d *decoder, v *yaml.Node, path string, _, s reflect.Value) {
	base := parentPath(path) // traffic, or flows[i]
	qps, conns, verb := base+".num-qps", base+".num-connections", base+".rdma-verb"
	if path == qps && d.given(conns) {
		return // the num-connections row reports the conflict
	}
	tr := trafficOf(s)
	if d.given(verb) {
		if i, ok := d.enum(d.nodes[verb], verb, verbNames); ok {
			tr.Verb = Verb(verbNames[i])
		}
	}
	if path == conns && d.given(qps) {
		d.errorf(d.keys[conns], "num-connections and num-qps are the same setting (the paper's and the public tool's spelling): give only one")
		d.bad[qps] = true
		return
	}
	d.nodes[qps] = v
	defer func() { d.bad[qps] = d.bad[qps] || d.bad[path] }() // a rejected num-connections is a rejected num-qps
	n, ok := d.scalar(v, path, "an integer")
	if !ok {
		return
	}
	verbKnown := !d.bad[verb]
	if a, b, found := strings.Cut(n, ","); found {
		if verbKnown && tr.Verb != VerbSendRead {
			d.fail(v, path, "%s (a SEND QPs, then b READ QPs) is only allowed with rdma-verb send_read, not %s", describe(v), tr.Verb)
			return
		}
		x, err1 := parseInt(a)
		y, err2 := parseInt(b)
		if err1 != nil || err2 != nil {
			d.fail(v, path, "want \"a,b\" with two integers, got %s", describe(v))
			return
		}
		if x < 1 || y < 1 || x+y > maxQPs {
			d.fail(v, path, "want \"a,b\" with a >= 1, b >= 1 and a+b <= %d, got %s", maxQPs, describe(v))
			return
		}
		tr.NumQPs, tr.NumReadQPs = int(x+y), int(y)
		return
	}
	if _, err := parseInt(n); err == nil && verbKnown && tr.Verb == VerbSendRead {
		d.fail(v, path, "rdma-verb send_read wants \"a,b\" (a SEND QPs, then b READ QPs), got %s", n)
		return
	}
	d.intIn(v, path, &tr.NumQPs, 1, maxQPs, "")
}

func decMTU(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	if mtu, ok := d.intVal(v, path); ok && roce.ValidMTU(mtu) {
		f.SetInt(int64(mtu))
	} else if ok {
		d.fail(v, path, "want %s, got %d", roce.MTUChoices, mtu)
	}
}

// decDSCPList decodes dscp-list: a YAML list of DSCPs, or the public
// Lumina's string (its generator's -D argument, get_dscp_list in
// my-ib-traffic-gen/common.c): comma-separated items, each a DSCP "a" or an
// inclusive range "a-b" with a ≤ b, all in 0..63, expanded in order:
// "1-2,5-6" is [1 2 5 6], "26,26" is [26 26]. A plain integer is a
// one-item list.
func decDSCPList(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	list := ptr[[]int](f)
	if v.Kind == yaml.ScalarNode {
		l, err := parseDSCPString(v.Value)
		if err != nil {
			d.fail(v, path, "%v", err)
			return
		}
		*list = l
		return
	}
	elems, _ := d.seq(v, path)
	for i, e := range elems {
		var x int
		if d.intIn(e, fmt.Sprintf("%s[%d]", path, i), &x, 0, 63, "") {
			*list = append(*list, x)
		} else {
			d.bad[path] = true
		}
	}
}

// parseDSCPString expands the public Lumina's dscp-list string (see
// decDSCPList).
func parseDSCPString(s string) ([]int, error) {
	const form = `want a list or a string like "26,28" or "1-2,5-6" (DSCPs or ranges a-b in 0..63)`
	var out []int
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 8)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 8)
		}
		switch {
		case err1 != nil || err2 != nil:
			return nil, fmt.Errorf("%q: bad item %q: %s", s, item, form)
		case a > 63 || b > 63:
			return nil, fmt.Errorf("%q: %q out of range 0..63", s, item)
		case a > b:
			return nil, fmt.Errorf("%q: range %q runs backwards (want a-b with a ≤ b)", s, item)
		}
		for x := a; x <= b; x++ {
			out = append(out, int(x))
		}
	}
	return out, nil
}

// decEvents decodes data-pkt-events, noting for each event whether it was
// decoded without error.
func decEvents(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	elems, _ := d.seq(v, path)
	events := ptr[[]Event](f)
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		ev := Event{Pos: Pos{max(e.Line, 1), max(e.Column, 1)}}
		rv := reflect.ValueOf(&ev).Elem()
		setDefaults(eventSection, rv)
		ok := d.section(e, p, eventSection, rv) && !d.bad[p]
		for _, k := range eventSection.names {
			ok = ok && !d.bad[p+"."+k]
		}
		*events = append(*events, ev)
		d.evOK[path] = append(d.evOK[path], ok)
	}
}

func decPSN(d *decoder, v *yaml.Node, path string, f, s reflect.Value) {
	if v.Kind == yaml.ScalarNode && strings.EqualFold(v.Value, "all") {
		f.SetInt(AllPackets)
	} else if _, err := parseInt(v.Value); v.Kind == yaml.ScalarNode && err != nil {
		d.fail(v, path, "want an integer or \"all\", got %s", describe(v))
	} else {
		ints(0, inf, "(psn is the 0-based packet index within a message)")(d, v, path, f, s)
	}
}

func decMsg(d *decoder, v *yaml.Node, path string, f, s reflect.Value) {
	if v.Kind == yaml.ScalarNode && strings.EqualFold(v.Value, "all") {
		f.SetInt(AllMessages)
	} else {
		ints(0, inf, "(msg is the 0-based message index)")(d, v, path, f, s)
	}
}

func decEventType(d *decoder, v *yaml.Node, path string, f, _ reflect.Value) {
	if i, ok := d.enum(v, path, eventTypeNames); ok {
		f.SetUint(uint64([]EventType{EventDrop, EventECN, EventCorrupt, EventCorrupt, EventDelay, EventReorder, EventDuplicate}[i]))
	}
}

func decPacket(d *decoder, v *yaml.Node, path string, _, _ reflect.Value) {
	if s, ok := d.scalar(v, path, "data"); ok && !strings.EqualFold(s, "data") {
		d.fail(v, path, "want data, got %s; to address the responder's ACK/NAK packets, give direction: response", describe(v))
	}
}
