package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
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
	seen map[string]bool // "line:col:msg" of errors already reported

	// nodes and keys hold the value and key node of every known key that
	// was given, by dotted path ("traffic.mtu",
	// "traffic.data-pkt-events[2].psn"); null values are included.
	nodes map[string]*yaml.Node
	keys  map[string]*yaml.Node
	// bad holds the paths whose value was rejected, so that checks that
	// depend on them are skipped instead of cascading.
	bad map[string]bool

	// What the file said, for resolve and validate.
	testbedSet   bool
	mirrors      []string // "requester-mirror" and/or "responder-mirror", as given
	dumpersGiven bool
	backendSet   []bool // per Test.Dumpers entry
	evOK         []bool // per Traffic.Events entry: decoded without error

	merged int // keys pulled in by merge keys so far, against maxMerged
}

func newDecoder(file string) *decoder {
	return &decoder{
		file:  file,
		seen:  map[string]bool{},
		nodes: map[string]*yaml.Node{},
		keys:  map[string]*yaml.Node{},
		bad:   map[string]bool{},
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

// --- sections ---------------------------------------------------------------

var topKeys = []string{
	"name", "seed", "testbed", "iter-scope", "result-path", "local-workspace",
	"aggregate-pcap-filename", "num-repeats", "rewrite-udp-dst-port",
	"switch", "requester", "responder", "requester-mirror", "responder-mirror",
	"dumpers", "traffic",
}

func (d *decoder) test(root *yaml.Node) *Test {
	t := &Test{
		File:                  d.file,
		Seed:                  defaultSeed,
		ResultPath:            defaultResultPath,
		AggregatePcapFilename: defaultAggregatePcap,
		NumRepeats:            defaultNumRepeats,
		RewriteUDPDstPort:     defaultRewriteUDPDstPort,
	}
	t.Switch = Switch{ListenPort: defaultSwitchListenPort}
	t.Requester, t.Responder = defaultHost(), defaultHost()
	t.Traffic = defaultTraffic()

	m := d.object(root, "", topKeys)
	if m == nil {
		return nil
	}
	if v := m["name"]; v != nil {
		d.nonEmpty(v, "name", &t.Name)
	}
	if v := m["seed"]; v != nil {
		if s, ok := d.scalar(v, "seed", "an unsigned integer"); ok {
			u, err := parseUint(strings.TrimPrefix(strings.TrimSpace(s), "+"))
			if err != nil {
				d.fail(v, "seed", "want an unsigned 64-bit integer, got %s", describe(v))
			} else {
				t.Seed = u
			}
		}
	}
	if v := m["testbed"]; v != nil {
		if i, ok := d.enum(v, "testbed", testbedNames); ok {
			t.Testbed, d.testbedSet = Testbed(i), true
		}
	}
	if v := m["iter-scope"]; v != nil {
		if i, ok := d.enum(v, "iter-scope", iterScopeNames); ok {
			t.IterScope = IterScope(i)
		}
	}
	if v := m["result-path"]; v != nil {
		d.nonEmpty(v, "result-path", &t.ResultPath)
	}
	if v := m["local-workspace"]; v != nil {
		d.strVal(v, "local-workspace", &t.LocalWorkspace)
	}
	if v := m["aggregate-pcap-filename"]; v != nil {
		d.fileName(v, "aggregate-pcap-filename", &t.AggregatePcapFilename)
	}
	if v := m["num-repeats"]; v != nil {
		d.intIn(v, "num-repeats", &t.NumRepeats, 1, math.MaxInt, "")
	}
	if v := m["rewrite-udp-dst-port"]; v != nil {
		var p int
		if d.intIn(v, "rewrite-udp-dst-port", &p, 1, 65535, "") {
			if p == roceUDPPort {
				d.fail(v, "rewrite-udp-dst-port", "must not be 4791, the RoCEv2 port: dumpers could not tell mirrored copies from live traffic")
			} else {
				t.RewriteUDPDstPort = p
			}
		}
	}
	if v := m["switch"]; v != nil {
		d.switchSection(v, &t.Switch)
	}
	if v := m["requester"]; v != nil {
		d.host(v, "requester", &t.Requester)
	}
	if v := m["responder"]; v != nil {
		d.host(v, "responder", &t.Responder)
	}
	for _, name := range []string{"requester-mirror", "responder-mirror"} {
		if v := m[name]; v != nil {
			d.mirrors = append(d.mirrors, name)
			dm := defaultDumper(name)
			d.mirror(v, name, &dm)
			t.Dumpers = append(t.Dumpers, dm)
			d.backendSet = append(d.backendSet, false)
		}
	}
	if v := m["dumpers"]; v != nil {
		d.dumpersGiven = true
		if len(d.mirrors) > 0 {
			d.errorf(d.keys["dumpers"], "dumpers and %s are mutually exclusive: use dumpers, or the public tool's requester-mirror and responder-mirror", strings.Join(d.mirrors, "/"))
			d.bad["dumpers"] = true
		} else {
			d.dumpers(v, t)
		}
	}
	if v := m["traffic"]; v != nil {
		d.traffic(v, &t.Traffic)
	}
	return t
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
	*dst = s
	return true
}

var switchKeys = []string{
	"sde-path", "workspace", "control-ip", "username", "ssh-key-filepath",
	"port-speed", "fec-type", "listen-port", "local-switch-config-path",
}

var portSpeeds = []string{"NONE", "1G", "10G", "25G", "40G", "50G", "100G", "200G", "400G"}
var fecTypes = []string{"NONE", "FC", "RS"}

func (d *decoder) switchSection(n *yaml.Node, s *Switch) {
	m := d.object(n, "switch", switchKeys)
	if m == nil {
		return
	}
	str := map[string]*string{
		"sde-path": &s.SDEPath, "workspace": &s.Workspace, "control-ip": &s.ControlIP,
		"username": &s.Username, "ssh-key-filepath": &s.SSHKeyFilepath,
		"local-switch-config-path": &s.LocalSwitchConfigPath,
	}
	for _, k := range switchKeys {
		if v, dst := m[k], str[k]; v != nil && dst != nil {
			d.strVal(v, "switch."+k, dst)
		}
	}
	if v := m["port-speed"]; v != nil {
		if i, ok := d.enum(v, "switch.port-speed", portSpeeds); ok {
			s.PortSpeed = portSpeeds[i]
		}
	}
	if v := m["fec-type"]; v != nil {
		if i, ok := d.enum(v, "switch.fec-type", fecTypes); ok {
			s.FECType = fecTypes[i]
		}
	}
	if v := m["listen-port"]; v != nil {
		d.intIn(v, "switch.listen-port", &s.ListenPort, 1, 65535, "")
	}
}

func defaultHost() Host {
	return Host{
		NIC: NIC{IBPort: defaultIBPort},
		RoCE: RoCEParameters{
			DCQCNRPEnable:      true,
			DCQCNNPEnable:      true,
			MinTimeBetweenCNPs: defaultMinTimeBtwCNPs,
			DCQCNEnable:        true,
		},
	}
}

var hostKeys = []string{"workspace", "control-ip", "username", "ssh-key-filepath", "nic", "roce-parameters"}

func (d *decoder) host(n *yaml.Node, path string, h *Host) {
	m := d.object(n, path, hostKeys)
	if m == nil {
		return
	}
	d.login(m, path, &h.Workspace, &h.ControlIP, &h.Username, &h.SSHKeyFilepath)
	if v := m["nic"]; v != nil {
		d.hostNIC(v, path+".nic", &h.NIC)
	}
	if v := m["roce-parameters"]; v != nil {
		d.roce(v, path+".roce-parameters", &h.RoCE)
	}
}

// login decodes the login keys shared by hosts, mirrors and dumpers.
func (d *decoder) login(m map[string]*yaml.Node, path string, ws, ip, user, key *string) {
	for k, dst := range map[string]*string{"workspace": ws, "control-ip": ip, "username": user, "ssh-key-filepath": key} {
		if v := m[k]; v != nil {
			d.strVal(v, join(path, k), dst)
		}
	}
}

var hostNICKeys = []string{"type", "personality", "if-name", "pci-addr", "ib-device", "ib-port", "switch-port", "ip-list", "prio-dscp-map"}

var hostNICTypes = []string{"cx4", "cx5", "cx6", "e810"}
var dumperNICTypes = []string{"cx4", "cx5", "cx6", "e810", "xl710"}
var builtinPersonalities = []string{"spec", "cx4", "cx5", "cx6"}

func (d *decoder) hostNIC(n *yaml.Node, path string, nic *NIC) {
	m := d.object(n, path, hostNICKeys)
	if m == nil {
		return
	}
	if v := m["type"]; v != nil {
		if s, ok := d.scalar(v, path+".type", quoteList(hostNICTypes)); ok {
			if strings.EqualFold(s, "xl710") {
				d.fail(v, path+".type", "xl710 has no RDMA support: it is allowed on dumpers (mirrors) only; want %s", quoteList(hostNICTypes))
			} else if i, ok := d.enum(v, path+".type", hostNICTypes); ok {
				nic.Type = hostNICTypes[i]
			}
		}
	}
	if v := m["personality"]; v != nil {
		var s string
		if d.nonEmpty(v, path+".personality", &s) {
			low := strings.ToLower(s)
			switch {
			case slices.Contains(builtinPersonalities, low):
				nic.Personality = low
			case strings.HasSuffix(low, ".yaml") || strings.HasSuffix(low, ".yml"):
				nic.Personality = s
			default:
				msg := fmt.Sprintf("want %s, or the path of a .yaml/.yml file, got %s", quoteList(builtinPersonalities), describe(v))
				if sug := suggest(s, builtinPersonalities); sug != "" {
					msg += fmt.Sprintf("; did you mean %q?", sug)
				}
				d.fail(v, path+".personality", "%s", msg)
			}
		}
	}
	d.nicCommon(m, path, nic)
	if v := m["ib-device"]; v != nil {
		d.strVal(v, path+".ib-device", &nic.IBDevice)
	}
	if v := m["ib-port"]; v != nil {
		d.intIn(v, path+".ib-port", &nic.IBPort, 1, 255, "")
	}
	if v := m["ip-list"]; v != nil {
		d.ipList(v, path+".ip-list", nic)
	}
	if v := m["prio-dscp-map"]; v != nil {
		d.prioDSCPMap(v, path+".prio-dscp-map", nic)
	}
}

// nicCommon decodes the keys that host and dumper NICs share.
func (d *decoder) nicCommon(m map[string]*yaml.Node, path string, nic *NIC) {
	if v := m["if-name"]; v != nil {
		d.strVal(v, path+".if-name", &nic.IfName)
	}
	if v := m["pci-addr"]; v != nil {
		d.strVal(v, path+".pci-addr", &nic.PCIAddr)
	}
	if v := m["switch-port"]; v != nil {
		d.intIn(v, path+".switch-port", &nic.SwitchPort, 0, 511, "")
	}
}

func (d *decoder) ipList(v *yaml.Node, path string, nic *NIC) {
	elems, ok := d.seq(v, path)
	if !ok {
		return
	}
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
		nic.IPList = append(nic.IPList, p)
	}
}

func (d *decoder) prioDSCPMap(v *yaml.Node, path string, nic *NIC) {
	if v.Kind != yaml.MappingNode {
		d.fail(v, path, "want a mapping from priority (0..7) to DSCP values such as \"8,9,10\", got %s", describe(v))
		return
	}
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
		if nic.PrioDSCPMap == nil {
			nic.PrioDSCPMap = map[int][]int{}
		}
		nic.PrioDSCPMap[int(prio)] = dscps
	}
}

var roceKeys = []string{"dcqcn-rp-enable", "dcqcn-np-enable", "min-time-between-cnps", "adaptive-retrans", "slow-restart", "dcqcn-enable"}

func (d *decoder) roce(n *yaml.Node, path string, r *RoCEParameters) {
	m := d.object(n, path, roceKeys)
	if m == nil {
		return
	}
	for k, dst := range map[string]*bool{
		"dcqcn-rp-enable": &r.DCQCNRPEnable, "dcqcn-np-enable": &r.DCQCNNPEnable,
		"adaptive-retrans": &r.AdaptiveRetrans, "slow-restart": &r.SlowRestart, "dcqcn-enable": &r.DCQCNEnable,
	} {
		if v := m[k]; v != nil {
			d.boolVal(v, path+"."+k, dst)
		}
	}
	if v := m["min-time-between-cnps"]; v != nil {
		d.intIn(v, path+".min-time-between-cnps", &r.MinTimeBetweenCNPs, 0, math.MaxInt, "")
	}
}

func defaultDumper(name string) Dumper {
	return Dumper{
		Name:    name,
		Weight:  defaultDumperWeight,
		Workers: defaultDumperWorkers,
		SnapLen: defaultSnapLen,
		NumPkts: defaultNumPkts,
	}
}

var mirrorKeys = []string{"workspace", "control-ip", "username", "ssh-key-filepath", "pkt-dump-conf", "nic"}
var pktDumpKeys = []string{"dump-filename", "snap-len", "num-pkts"}

func (d *decoder) mirror(n *yaml.Node, path string, dm *Dumper) {
	m := d.object(n, path, mirrorKeys)
	if m == nil {
		return
	}
	d.login(m, path, &dm.Workspace, &dm.ControlIP, &dm.Username, &dm.SSHKeyFilepath)
	if v := m["pkt-dump-conf"]; v != nil {
		pm := d.object(v, path+".pkt-dump-conf", pktDumpKeys)
		d.dumpConf(pm, path+".pkt-dump-conf", dm)
	}
	if v := m["nic"]; v != nil {
		d.dumperNIC(v, path+".nic", &dm.NIC)
	}
}

// dumpConf decodes dump-filename, snap-len and num-pkts.
func (d *decoder) dumpConf(m map[string]*yaml.Node, path string, dm *Dumper) {
	if v := m["dump-filename"]; v != nil {
		d.fileName(v, path+".dump-filename", &dm.DumpFilename)
	}
	if v := m["snap-len"]; v != nil {
		d.intIn(v, path+".snap-len", &dm.SnapLen, minSnapLen, maxSnapLen, "")
	}
	if v := m["num-pkts"]; v != nil {
		d.intIn(v, path+".num-pkts", &dm.NumPkts, 1, 1<<30, "")
	}
}

var dumperNICKeys = []string{"if-name", "pci-addr", "switch-port", "rte-port-id", "type"}

func (d *decoder) dumperNIC(n *yaml.Node, path string, nic *NIC) {
	m := d.object(n, path, dumperNICKeys)
	if m == nil {
		return
	}
	if v := m["type"]; v != nil {
		if i, ok := d.enum(v, path+".type", dumperNICTypes); ok {
			nic.Type = dumperNICTypes[i]
		}
	}
	d.nicCommon(m, path, nic)
	if v := m["rte-port-id"]; v != nil {
		d.intIn(v, path+".rte-port-id", &nic.RTEPortID, 0, 1023, "")
	}
}

var dumperKeys = []string{
	"name", "weight", "workers", "backend", "snap-len", "num-pkts", "dump-filename",
	"control-ip", "username", "ssh-key-filepath", "workspace", "nic", "eal-args",
}

func (d *decoder) dumpers(v *yaml.Node, t *Test) {
	elems, ok := d.seq(v, "dumpers")
	if !ok {
		return
	}
	if len(elems) == 0 || len(elems) > maxDumpers {
		d.fail(v, "dumpers", "want 1..%d dumpers, got %d", maxDumpers, len(elems))
		if len(elems) > maxDumpers {
			elems = elems[:maxDumpers]
		}
	}
	for i, e := range elems {
		path := fmt.Sprintf("dumpers[%d]", i)
		dm := defaultDumper(fmt.Sprintf("dumper-%d", i))
		d.nodes[path] = e
		set := false
		if m := d.object(e, path, dumperKeys); m != nil {
			if v := m["name"]; v != nil {
				var s string
				if d.nonEmpty(v, path+".name", &s) {
					if !validName(s) {
						d.fail(v, path+".name", "want letters, digits, '.', '_' or '-', got %s", describe(v))
					} else {
						dm.Name = s
					}
				}
			}
			if v := m["weight"]; v != nil {
				d.intIn(v, path+".weight", &dm.Weight, 1, maxDumperWeight, "")
			}
			if v := m["workers"]; v != nil {
				d.intIn(v, path+".workers", &dm.Workers, 1, maxDumperWorkers, "")
			}
			if v := m["backend"]; v != nil {
				if i, ok := d.enum(v, path+".backend", backendNames); ok {
					dm.Backend, set = DumperBackend(i), true
				}
			}
			d.dumpConf(m, path, &dm)
			d.login(m, path, &dm.Workspace, &dm.ControlIP, &dm.Username, &dm.SSHKeyFilepath)
			if v := m["nic"]; v != nil {
				d.dumperNIC(v, path+".nic", &dm.NIC)
			}
			if v := m["eal-args"]; v != nil {
				if l, ok := d.strList(v, path+".eal-args"); ok && len(l) > 0 {
					dm.EALArgs = l
				}
			}
		}
		t.Dumpers = append(t.Dumpers, dm)
		d.backendSet = append(d.backendSet, set)
	}
}

func validName(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return s != "." && s != ".."
}

func defaultTraffic() Traffic {
	return Traffic{
		NumQPs:               defaultNumQPs,
		NumMsgsPerQP:         defaultNumMsgsPerQP,
		MTU:                  defaultMTU,
		MessageSize:          defaultMessageSize,
		ListenPort:           defaultTrafficListenPort,
		TxDepth:              defaultTxDepth,
		MinRetransmitTimeout: defaultMinRetransTimeout,
		MaxRetransmitRetry:   defaultMaxRetransRetry,
	}
}

var trafficKeys = []string{
	"num-qps", "num-connections", "rdma-verb", "num-msgs-per-qp", "mtu", "message-size",
	"listen-port", "multi-gid", "barrier-sync", "tx-depth", "min-retransmit-timeout",
	"max-retransmit-retry", "dscp-list", "data-pkt-events",
}

var validMTUs = []int{256, 512, 1024, 2048, 4096}

func (d *decoder) traffic(n *yaml.Node, tr *Traffic) {
	const p = "traffic"
	m := d.object(n, p, trafficKeys)
	if m == nil {
		return
	}
	if v := m["rdma-verb"]; v != nil {
		if i, ok := d.enum(v, p+".rdma-verb", verbNames); ok {
			tr.Verb = Verb(i)
		}
	}
	qpKey := "num-qps"
	if v := m["num-connections"]; v != nil {
		if m["num-qps"] != nil {
			d.errorf(d.keys[p+".num-connections"], "num-connections and num-qps are the same setting (the paper's and the public tool's spelling): give only one")
			d.bad[p+".num-qps"] = true
		} else {
			qpKey = "num-connections"
		}
	}
	if v := m[qpKey]; v != nil && !d.bad[p+".num-qps"] {
		d.numQPs(v, p+"."+qpKey, tr)
		if d.bad[p+"."+qpKey] {
			d.bad[p+".num-qps"] = true
		}
		d.nodes[p+".num-qps"] = v
	} else if tr.Verb == VerbSendRead && !d.bad[p+".rdma-verb"] {
		tr.NumQPs, tr.NumReadQPs = 2, 1
	}
	if v := m["num-msgs-per-qp"]; v != nil {
		d.intIn(v, p+".num-msgs-per-qp", &tr.NumMsgsPerQP, 1, maxMsgsPerQP, "")
	}
	if v := m["mtu"]; v != nil {
		var mtu int
		if x, ok := d.intVal(v, p+".mtu"); ok {
			mtu = x
			if slices.Contains(validMTUs, mtu) {
				tr.MTU = mtu
			} else {
				d.fail(v, p+".mtu", "want 256, 512, 1024, 2048 or 4096, got %d", mtu)
			}
		}
	}
	if v := m["message-size"]; v != nil {
		d.intIn(v, p+".message-size", &tr.MessageSize, 0, maxMessageSize, "")
	}
	if v := m["listen-port"]; v != nil {
		d.intIn(v, p+".listen-port", &tr.ListenPort, 1, 65535, "")
	}
	if v := m["multi-gid"]; v != nil {
		d.boolVal(v, p+".multi-gid", &tr.MultiGID)
	}
	if v := m["barrier-sync"]; v != nil {
		d.boolVal(v, p+".barrier-sync", &tr.BarrierSync)
	}
	if v := m["tx-depth"]; v != nil {
		d.intIn(v, p+".tx-depth", &tr.TxDepth, 1, math.MaxInt, "")
	}
	if v := m["min-retransmit-timeout"]; v != nil {
		d.intIn(v, p+".min-retransmit-timeout", &tr.MinRetransmitTimeout, 0, 31, "")
	}
	if v := m["max-retransmit-retry"]; v != nil {
		d.intIn(v, p+".max-retransmit-retry", &tr.MaxRetransmitRetry, 0, 7, "")
	}
	if v := m["dscp-list"]; v != nil {
		if elems, ok := d.seq(v, p+".dscp-list"); ok {
			for i, e := range elems {
				var x int
				if d.intIn(e, fmt.Sprintf("%s.dscp-list[%d]", p, i), &x, 0, 63, "") {
					tr.DSCPList = append(tr.DSCPList, x)
				} else {
					d.bad[p+".dscp-list"] = true
				}
			}
		}
	}
	if v := m["data-pkt-events"]; v != nil {
		if elems, ok := d.seq(v, p+".data-pkt-events"); ok {
			for i, e := range elems {
				ev, ok := d.event(e, fmt.Sprintf("%s.data-pkt-events[%d]", p, i))
				tr.Events = append(tr.Events, ev)
				d.evOK = append(d.evOK, ok)
			}
		}
	}
}

// numQPs decodes num-qps: an integer, or "a,b" with rdma-verb send_read.
func (d *decoder) numQPs(v *yaml.Node, path string, tr *Traffic) {
	s, ok := d.scalar(v, path, "an integer")
	if !ok {
		return
	}
	verbKnown := !d.bad["traffic.rdma-verb"]
	if a, b, found := strings.Cut(s, ","); found {
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
	if verbKnown && tr.Verb == VerbSendRead {
		if _, err := parseInt(s); err == nil {
			d.fail(v, path, "rdma-verb send_read wants \"a,b\" (a SEND QPs, then b READ QPs), got %s", s)
			return
		}
	}
	d.intIn(v, path, &tr.NumQPs, 1, maxQPs, "")
}

var eventKeys = []string{"qpn", "psn", "type", "iter", "msg", "packet"}
var eventTypeNames = []string{"drop", "ecn", "corrupt", "bit-error"}

// event decodes one data-pkt-events entry; ok is false if anything in it
// was rejected.
func (d *decoder) event(n *yaml.Node, path string) (ev Event, ok bool) {
	ev = Event{Iter: 1, Msg: AllMessages, Pos: Pos{max(n.Line, 1), max(n.Column, 1)}}
	m := d.object(n, path, eventKeys)
	if m == nil {
		return ev, false
	}
	for _, k := range []string{"qpn", "psn", "type"} {
		if m[k] == nil {
			if d.nodes[path+"."+k] != nil {
				d.errorf(d.nodes[path+"."+k], "%s: required, got null", k)
			} else {
				d.errorf(n, "missing key %q in %s", k, path)
			}
			d.bad[path] = true
		}
	}
	if v := m["qpn"]; v != nil {
		d.intIn(v, path+".qpn", &ev.QPN, 0, math.MaxInt, "(qpn is the 0-based QP index)")
	}
	if v := m["psn"]; v != nil {
		if v.Kind == yaml.ScalarNode && strings.EqualFold(v.Value, "all") {
			ev.PSN = AllPackets
		} else if _, err := parseInt(v.Value); v.Kind == yaml.ScalarNode && err != nil {
			d.fail(v, path+".psn", "want an integer or \"all\", got %s", describe(v))
		} else {
			d.intIn(v, path+".psn", &ev.PSN, 0, math.MaxInt, "(psn is the 0-based packet index within a message)")
		}
	}
	if v := m["type"]; v != nil {
		if i, ok := d.enum(v, path+".type", eventTypeNames); ok {
			ev.Type = []EventType{EventDrop, EventECN, EventCorrupt, EventCorrupt}[i]
		}
	}
	if v := m["iter"]; v != nil {
		d.intIn(v, path+".iter", &ev.Iter, 1, math.MaxInt, "(iter is the 1-based transmission round: 1 is the first transmission)")
	}
	if v := m["msg"]; v != nil {
		if v.Kind == yaml.ScalarNode && strings.EqualFold(v.Value, "all") {
			ev.Msg = AllMessages
		} else {
			d.intIn(v, path+".msg", &ev.Msg, 0, math.MaxInt, "(msg is the 0-based message index)")
		}
	}
	if v := m["packet"]; v != nil {
		if s, ok := d.scalar(v, path+".packet", "data"); ok && !strings.EqualFold(s, "data") {
			d.fail(v, path+".packet", "events on control packets are not supported: the injector matches data packets only (got %s, want data)", describe(v))
		}
	}
	ok = !d.bad[path]
	for _, k := range eventKeys {
		ok = ok && !d.bad[path+"."+k]
	}
	return ev, ok
}
