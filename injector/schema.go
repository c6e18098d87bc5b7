package injector

import (
	"fmt"
	"sort"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// The Go pipeline implements exactly these tables, actions, registers and
// counters of p4src/lumina.p4 (names and bit widths). A P4Info pushed with
// SetForwardingPipelineConfig must describe the same objects; IDs may differ
// (a real p4c assigns its own), the server maps them.
var (
	wantTables = map[string][]int{ // key bit widths, in order
		"Ingress.l2_forward":     {48},
		"Ingress.arp_proxy":      {32},
		"Ingress.conn_lookup":    {9, 24},
		"Ingress.event_table":    {9, 24, 24, 16},
		"Ingress.wrr_config":     {},
		"Ingress.mirror_select":  {8},
		"Egress.mirror_rewrite":  {},
		"Egress.ecn_red":         {6},
		"Egress.ecn_red_port":    {9, 6},
		"Ingress.port_switch":    {9},
		"Ingress.fabric_forward": {5, 48, 48},
	}
	wantActions = map[string][]int{ // parameter bit widths, in order
		"NoAction":                {},
		"Ingress.forward":         {9},
		"Ingress.drop_frame":      {},
		"Ingress.arp_reply":       {48},
		"Ingress.set_conn":        {16, 1, 1},
		"Ingress.drop_event":      {},
		"Ingress.mark_ecn":        {},
		"Ingress.corrupt":         {},
		"Ingress.delay_event":     {32},
		"Ingress.reorder_event":   {8, 32},
		"Ingress.duplicate_event": {8},
		"Ingress.set_wrr_size":    {8},
		"Ingress.set_mirror":      {10},
		"Egress.rewrite_mirror":   {16},
		"Egress.set_red":          {19, 19, 32},
		"Ingress.set_switch":      {5},
	}
	wantRegisters = map[string][2]int{ // bit width, size
		"Ingress.expected_psn":   {32, 16384},
		"Ingress.iter_reg":       {16, 16384},
		"Ingress.wrr_index":      {8, MaxSwitches},
		"Ingress.mirror_seq_lo":  {32, MaxSwitches},
		"Ingress.mirror_seq_hi":  {8, MaxSwitches},
		"Ingress.conn_forwarded": {32, 16384},
	}
	wantCounters = map[string]int{ // size
		"Ingress.rx_roce":     512,
		"Ingress.event_drops": 512,
		"Ingress.mirrored":    256,
		"Egress.tx_roce":      512,
	}
)

// Default actions of the tables (P4 default_action).
var defaultActions = map[string]struct {
	action string
	params []uint64
}{
	"Ingress.l2_forward":     {"Ingress.drop_frame", nil},
	"Ingress.arp_proxy":      {"NoAction", nil},
	"Ingress.conn_lookup":    {"NoAction", nil},
	"Ingress.event_table":    {"NoAction", nil},
	"Ingress.wrr_config":     {"Ingress.set_wrr_size", []uint64{1}},
	"Ingress.mirror_select":  {"NoAction", nil},
	"Egress.mirror_rewrite":  {"Egress.rewrite_mirror", []uint64{9741}},
	"Egress.ecn_red":         {"NoAction", nil},
	"Egress.ecn_red_port":    {"NoAction", nil},
	"Ingress.port_switch":    {"Ingress.set_switch", []uint64{0}},
	"Ingress.fabric_forward": {"NoAction", nil},
}

type fieldInfo struct {
	id    uint32
	name  string
	width int
}

type actionInfo struct {
	id     uint32
	name   string
	params []fieldInfo
}

type tableInfo struct {
	id      uint32
	name    string
	fields  []fieldInfo
	actions map[uint32]bool
	size    int
	idle    bool // the table supports idle timeout (idle_timeout_ns may be set)
}

type registerInfo struct {
	id    uint32
	name  string
	width int
	size  int
}

type counterInfo struct {
	id   uint32
	name string
	size int
}

// schema is a validated P4Info, indexed by ID and name.
type schema struct {
	info      *p4configv1.P4Info
	tables    map[uint32]*tableInfo
	actions   map[uint32]*actionInfo
	registers map[uint32]*registerInfo
	counters  map[uint32]*counterInfo
	byName    map[string]uint32
}

// newSchema checks that info describes the pipeline the Go target runs.
func newSchema(info *p4configv1.P4Info) (*schema, error) {
	s := &schema{info: info, tables: map[uint32]*tableInfo{}, actions: map[uint32]*actionInfo{},
		registers: map[uint32]*registerInfo{}, counters: map[uint32]*counterInfo{}, byName: map[string]uint32{}}
	ids := map[uint32]string{}
	claim := func(id uint32, name string) error {
		if id == 0 {
			return fmt.Errorf("%s has ID 0", name)
		}
		if prev, ok := ids[id]; ok {
			return fmt.Errorf("ID %#x used by %s and %s", id, prev, name)
		}
		ids[id] = name
		s.byName[name] = id
		return nil
	}
	for _, a := range info.GetActions() {
		name := a.GetPreamble().GetName()
		want, ok := wantActions[name]
		if !ok {
			return nil, fmt.Errorf("action %q is not implemented by the software target", name)
		}
		ai := &actionInfo{id: a.GetPreamble().GetId(), name: name}
		for _, p := range a.GetParams() {
			ai.params = append(ai.params, fieldInfo{p.GetId(), p.GetName(), int(p.GetBitwidth())})
		}
		if err := checkWidths("action "+name+" parameters", ai.params, want); err != nil {
			return nil, err
		}
		if err := claim(ai.id, name); err != nil {
			return nil, err
		}
		s.actions[ai.id] = ai
	}
	for _, t := range info.GetTables() {
		name := t.GetPreamble().GetName()
		want, ok := wantTables[name]
		if !ok {
			return nil, fmt.Errorf("table %q is not implemented by the software target", name)
		}
		ti := &tableInfo{id: t.GetPreamble().GetId(), name: name, actions: map[uint32]bool{}, size: int(t.GetSize()),
			idle: t.GetIdleTimeoutBehavior() == p4configv1.Table_NOTIFY_CONTROL}
		for _, f := range t.GetMatchFields() {
			if f.GetMatchType() != p4configv1.MatchField_EXACT {
				return nil, fmt.Errorf("table %s field %s: only exact match is implemented", name, f.GetName())
			}
			ti.fields = append(ti.fields, fieldInfo{f.GetId(), f.GetName(), int(f.GetBitwidth())})
		}
		if err := checkWidths("table "+name+" key", ti.fields, want); err != nil {
			return nil, err
		}
		for _, r := range t.GetActionRefs() {
			if s.actions[r.GetId()] == nil {
				return nil, fmt.Errorf("table %s refers to unknown action ID %#x", name, r.GetId())
			}
			ti.actions[r.GetId()] = true
		}
		if err := claim(ti.id, name); err != nil {
			return nil, err
		}
		s.tables[ti.id] = ti
	}
	for _, r := range info.GetRegisters() {
		name := r.GetPreamble().GetName()
		want, ok := wantRegisters[name]
		w := int(r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth())
		if !ok || w != want[0] || int(r.GetSize()) != want[1] {
			return nil, fmt.Errorf("register %q (bit<%d>[%d]) does not match the software target", name, w, r.GetSize())
		}
		if err := claim(r.GetPreamble().GetId(), name); err != nil {
			return nil, err
		}
		s.registers[r.GetPreamble().GetId()] = &registerInfo{r.GetPreamble().GetId(), name, w, int(r.GetSize())}
	}
	for _, c := range info.GetCounters() {
		name := c.GetPreamble().GetName()
		want, ok := wantCounters[name]
		if !ok || int(c.GetSize()) != want {
			return nil, fmt.Errorf("counter %q (size %d) does not match the software target", name, c.GetSize())
		}
		if err := claim(c.GetPreamble().GetId(), name); err != nil {
			return nil, err
		}
		s.counters[c.GetPreamble().GetId()] = &counterInfo{c.GetPreamble().GetId(), name, int(c.GetSize())}
	}
	for _, group := range []struct {
		what string
		want []string
	}{{"table", keys(wantTables)}, {"action", keys(wantActions)}, {"register", keys(wantRegisters)}, {"counter", keys(wantCounters)}} {
		for _, n := range group.want {
			if _, ok := s.byName[n]; !ok {
				return nil, fmt.Errorf("P4Info lacks %s %q", group.what, n)
			}
		}
	}
	return s, nil
}

func checkWidths(what string, got []fieldInfo, want []int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d fields, the software target implements %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].width != want[i] {
			return fmt.Errorf("%s: %s is bit<%d>, the software target implements bit<%d>", what, got[i].name, got[i].width, want[i])
		}
	}
	return nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
