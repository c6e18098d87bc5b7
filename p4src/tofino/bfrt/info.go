// Package bfrt is a small client of the BF-SDE's BfRuntime gRPC server
// (bf_switchd's BfRt server, bfruntime.proto in proto/bfrt): connect,
// subscribe, bind to a program, read the BfRt info JSON (the program's and
// the fixed-function one) to resolve table, key, action and data-field
// names to ids, and write and read table entries. Errors name the table
// and field.
//
// On top of it, pktgen.go turns a pause injection (traffic.pfc-events type
// pause) into the packet generator's writes, and port.go maps the
// NIC-facing ports' PFC enable to $PORT and the per-priority pause
// counters of $PORT_STAT to the switch's PFC counters. docs/tofino.md §8
// lists the writes and what only hardware can verify.
//
// The table and field names are those of open-p4studio's fixed-function
// BfRt JSON (p4lang/open-p4studio 1f97778f,
// pkgsrc/bf-drivers/src/bf_rt/bf_rt_pktgen/bf_rt_pktgen_tf{1,2}.json and
// bf_rt_port/bf_rt_port_tf{1,2}.json); the ids are never assumed: they are
// resolved from the info the server returns.
package bfrt

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInfo is wrapped by errors about the BfRt info and by name lookups.
var ErrInfo = errors.New("bfrt")

// Info is the union of the BfRt info JSONs of one program: its own tables
// and the fixed-function ones.
type Info struct {
	Tables []*Table
	byName map[string]*Table
	byID   map[uint32]*Table
}

// Table is one table of the info.
type Table struct {
	Name    string
	ID      uint32
	Type    string // table_type: MatchAction_Direct, PktgenAppCfg, PortConfigure, ...
	Size    int
	Keys    []*Field
	Actions []*Action
	Data    []*Field // data fields common to every action
}

// Action is one action of a table (action_specs).
type Action struct {
	Name string
	ID   uint32
	Data []*Field
}

// Field is a key or data field.
type Field struct {
	Name      string
	ID        uint32
	MatchType string // keys: Exact, Ternary, LPM, Range, Optional
	Type      string // uint32, uint64, bytes, bool, string, ...
	Width     int    // bits: the width of bytes fields and of uintN
	ReadOnly  bool
}

type jsonType struct {
	Type  string `json:"type"`
	Width int    `json:"width"`
}

type jsonField struct {
	ID        uint32   `json:"id"`
	Name      string   `json:"name"`
	MatchType string   `json:"match_type"`
	ReadOnly  bool     `json:"read_only"`
	Type      jsonType `json:"type"`
}

type jsonInfo struct {
	Tables []struct {
		Name    string      `json:"name"`
		ID      uint32      `json:"id"`
		Type    string      `json:"table_type"`
		Size    int         `json:"size"`
		Key     []jsonField `json:"key"`
		Actions []struct {
			ID   uint32      `json:"id"`
			Name string      `json:"name"`
			Data []jsonField `json:"data"`
		} `json:"action_specs"`
		Data []struct {
			ReadOnly  bool       `json:"read_only"`
			Singleton *jsonField `json:"singleton"`
		} `json:"data"`
	} `json:"tables"`
}

func field(j jsonField, ro bool) *Field {
	f := &Field{Name: j.Name, ID: j.ID, MatchType: j.MatchType, Type: j.Type.Type, Width: j.Type.Width, ReadOnly: j.ReadOnly || ro}
	switch f.Type {
	case "uint8":
		f.Width = 8
	case "uint16":
		f.Width = 16
	case "uint32", "int32":
		f.Width = 32
	case "uint64":
		f.Width = 64
	}
	return f
}

// ParseInfo reads BfRt info JSONs (bf-rt.json of a program, the
// fixed-function non_p4_config) into one Info. A table id or name seen
// twice is an error.
func ParseInfo(docs ...[]byte) (*Info, error) {
	in := &Info{byName: map[string]*Table{}, byID: map[uint32]*Table{}}
	for i, doc := range docs {
		if len(doc) == 0 {
			continue
		}
		var j jsonInfo
		if err := json.Unmarshal(doc, &j); err != nil {
			return nil, fmt.Errorf("%w: info JSON %d: %v", ErrInfo, i, err)
		}
		for _, jt := range j.Tables {
			t := &Table{Name: jt.Name, ID: jt.ID, Type: jt.Type, Size: jt.Size}
			if t.Name == "" {
				return nil, fmt.Errorf("%w: info JSON %d: a table without a name (id %#x)", ErrInfo, i, t.ID)
			}
			if in.byName[t.Name] != nil || in.byID[t.ID] != nil {
				return nil, fmt.Errorf("%w: table %s (id %#x) defined twice", ErrInfo, t.Name, t.ID)
			}
			for _, k := range jt.Key {
				t.Keys = append(t.Keys, field(k, false))
			}
			for _, a := range jt.Actions {
				act := &Action{Name: a.Name, ID: a.ID}
				for _, d := range a.Data {
					act.Data = append(act.Data, field(d, false))
				}
				t.Actions = append(t.Actions, act)
			}
			for _, d := range jt.Data {
				if d.Singleton != nil { // containers (oneof, arrays of structs) are not used by lumina
					t.Data = append(t.Data, field(*d.Singleton, d.ReadOnly))
				}
			}
			in.Tables = append(in.Tables, t)
			in.byName[t.Name] = t
			in.byID[t.ID] = t
		}
	}
	return in, nil
}

// Table finds a table by its full name ("pipe.Ingress.conn_lookup",
// "$PORT", "tf1.pktgen.app_cfg") or by a unique suffix of it at a dot
// ("pktgen.app_cfg", "Ingress.conn_lookup").
func (in *Info) Table(name string) (*Table, error) {
	if t := in.byName[name]; t != nil {
		return t, nil
	}
	var found []string
	for n := range in.byName {
		if strings.HasSuffix(n, "."+name) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 1:
		return in.byName[found[0]], nil
	case 0:
		return nil, fmt.Errorf("%w: no table %s in the BfRt info", ErrInfo, name)
	}
	sort.Strings(found)
	return nil, fmt.Errorf("%w: table %s is ambiguous: %s", ErrInfo, name, strings.Join(found, ", "))
}

// TableByID finds a table by id (nil: none).
func (in *Info) TableByID(id uint32) *Table { return in.byID[id] }

// Key finds a key field by name.
func (t *Table) Key(name string) (*Field, error) {
	for _, k := range t.Keys {
		if k.Name == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("%w: table %s has no key field %s", ErrInfo, t.Name, name)
}

// Action finds an action by name ("trigger_timer_one_shot",
// "Ingress.set_conn"; a suffix at a dot matches too).
func (t *Table) Action(name string) (*Action, error) {
	for _, a := range t.Actions {
		if a.Name == name || strings.HasSuffix(a.Name, "."+name) {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%w: table %s has no action %s", ErrInfo, t.Name, name)
}

// DataField finds a data field by name: one of act's (act may be nil),
// else one common to the table.
func (t *Table) DataField(act *Action, name string) (*Field, error) {
	if act != nil {
		for _, d := range act.Data {
			if d.Name == name {
				return d, nil
			}
		}
	}
	for _, d := range t.Data {
		if d.Name == name {
			return d, nil
		}
	}
	if act != nil {
		return nil, fmt.Errorf("%w: table %s action %s has no data field %s", ErrInfo, t.Name, act.Name, name)
	}
	return nil, fmt.Errorf("%w: table %s has no data field %s", ErrInfo, t.Name, name)
}

// DataFieldByID finds a data field by id, act's first (nil: none).
func (t *Table) DataFieldByID(act *Action, id uint32) *Field {
	if act != nil {
		for _, d := range act.Data {
			if d.ID == id {
				return d
			}
		}
	}
	for _, d := range t.Data {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// ActionByID finds an action by id (nil: none).
func (t *Table) ActionByID(id uint32) *Action {
	for _, a := range t.Actions {
		if a.ID == id {
			return a
		}
	}
	return nil
}
