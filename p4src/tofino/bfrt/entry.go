package bfrt

import (
	"encoding/binary"
	"fmt"

	pb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
)

// Entry is a table entry by names: what a write carries and what a read
// returns.
type Entry struct {
	Table  string // a name Info.Table accepts
	Keys   []KV   // exact-match key fields
	Action string // "" for tables without actions (and for data-only modifies)
	Data   []KV
	// Pipe, if set, is the one pipe the write or read is for (the
	// request's target); nil: all pipes.
	Pipe *uint32
}

// KV is a field's name and value. Values: uint64 (or int, uint32,
// uint16) for integer and bytes fields (big-endian in the field's width),
// []byte for bytes fields, bool and string. A read returns []byte for
// integer and bytes fields (see Entry.Uint).
type KV struct {
	Name string
	Val  any
}

// Uint returns data field name of a read entry as an integer.
func (e *Entry) Uint(name string) (uint64, error) {
	for _, kv := range e.Data {
		if kv.Name != name {
			continue
		}
		b, ok := kv.Val.([]byte)
		if !ok || len(b) > 8 {
			return 0, fmt.Errorf("%w: table %s field %s: %T of %d bytes is not an integer", ErrInfo, e.Table, name, kv.Val, len(b))
		}
		var v uint64
		for _, c := range b {
			v = v<<8 | uint64(c)
		}
		return v, nil
	}
	return 0, fmt.Errorf("%w: table %s: no data field %s in the entry read", ErrInfo, e.Table, name)
}

// Bool returns data field name of a read entry as a bool.
func (e *Entry) Bool(name string) (bool, error) {
	for _, kv := range e.Data {
		if kv.Name == name {
			if b, ok := kv.Val.(bool); ok {
				return b, nil
			}
			return false, fmt.Errorf("%w: table %s field %s: %T is not a bool", ErrInfo, e.Table, name, kv.Val)
		}
	}
	return false, fmt.Errorf("%w: table %s: no data field %s in the entry read", ErrInfo, e.Table, name)
}

func asUint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case uint32:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case int:
		if x >= 0 {
			return uint64(x), true
		}
	}
	return 0, false
}

// encodeBytes is f's value as bytes: an integer big-endian in the field's
// width (rounded up to bytes), or a byte string of that width (any length
// when the field has no fixed width or is a buffer).
func encodeBytes(t *Table, f *Field, v any) ([]byte, error) {
	n := (f.Width + 7) / 8
	if u, ok := asUint(v); ok {
		if n == 0 || n > 8 {
			return nil, fmt.Errorf("%w: table %s field %s: an integer for a %s field of %d bits", ErrInfo, t.Name, f.Name, f.Type, f.Width)
		}
		if f.Width < 64 && u>>f.Width != 0 {
			return nil, fmt.Errorf("%w: table %s field %s: %d does not fit in %d bits", ErrInfo, t.Name, f.Name, u, f.Width)
		}
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], u)
		return b[8-n:], nil
	}
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return nil, fmt.Errorf("%w: table %s field %s: value %v (%T) for a %s field", ErrInfo, t.Name, f.Name, v, v, f.Type)
}

// tableEntry resolves e against the info into a BfRt TableEntry.
func (in *Info) tableEntry(e Entry) (*pb.TableEntry, error) {
	t, err := in.Table(e.Table)
	if err != nil {
		return nil, err
	}
	te := &pb.TableEntry{TableId: t.ID}
	if len(e.Keys) > 0 {
		key := &pb.TableKey{}
		for _, kv := range e.Keys {
			f, err := t.Key(kv.Name)
			if err != nil {
				return nil, err
			}
			if f.MatchType != "Exact" {
				return nil, fmt.Errorf("%w: table %s key %s: %s match (only Exact is written by lumina)", ErrInfo, t.Name, f.Name, f.MatchType)
			}
			b, err := encodeBytes(t, f, kv.Val)
			if err != nil {
				return nil, err
			}
			key.Fields = append(key.Fields, &pb.KeyField{FieldId: f.ID, MatchType: &pb.KeyField_Exact_{Exact: &pb.KeyField_Exact{Value: b}}})
		}
		te.Value = &pb.TableEntry_Key{Key: key}
	}
	if e.Action == "" && len(e.Data) == 0 {
		return te, nil
	}
	data := &pb.TableData{}
	var act *Action
	if e.Action != "" {
		if act, err = t.Action(e.Action); err != nil {
			return nil, err
		}
		data.ActionId = act.ID
	}
	for _, kv := range e.Data {
		f, err := t.DataField(act, kv.Name)
		if err != nil {
			return nil, err
		}
		if f.ReadOnly {
			return nil, fmt.Errorf("%w: table %s field %s is read-only", ErrInfo, t.Name, f.Name)
		}
		df := &pb.DataField{FieldId: f.ID}
		switch f.Type {
		case "bool":
			b, ok := kv.Val.(bool)
			if !ok {
				return nil, fmt.Errorf("%w: table %s field %s: %v (%T) for a bool field", ErrInfo, t.Name, f.Name, kv.Val, kv.Val)
			}
			df.Value = &pb.DataField_BoolVal{BoolVal: b}
		case "string":
			s, ok := kv.Val.(string)
			if !ok {
				return nil, fmt.Errorf("%w: table %s field %s: %v (%T) for a string field", ErrInfo, t.Name, f.Name, kv.Val, kv.Val)
			}
			df.Value = &pb.DataField_StrVal{StrVal: s}
		default:
			b, err := encodeBytes(t, f, kv.Val)
			if err != nil {
				return nil, err
			}
			df.Value = &pb.DataField_Stream{Stream: b}
		}
		data.Fields = append(data.Fields, df)
	}
	te.Data = data
	return te, nil
}

// entryOf decodes a TableEntry read back into names.
func (in *Info) entryOf(te *pb.TableEntry) (Entry, error) {
	t := in.TableByID(te.GetTableId())
	if t == nil {
		return Entry{}, fmt.Errorf("%w: read an entry of unknown table id %#x", ErrInfo, te.GetTableId())
	}
	e := Entry{Table: t.Name}
	for _, kf := range te.GetKey().GetFields() {
		var name string
		for _, k := range t.Keys {
			if k.ID == kf.GetFieldId() {
				name = k.Name
			}
		}
		if name == "" {
			return Entry{}, fmt.Errorf("%w: table %s: read a key field of unknown id %d", ErrInfo, t.Name, kf.GetFieldId())
		}
		e.Keys = append(e.Keys, KV{name, kf.GetExact().GetValue()})
	}
	act := t.ActionByID(te.GetData().GetActionId())
	if act != nil {
		e.Action = act.Name
	}
	for _, df := range te.GetData().GetFields() {
		f := t.DataFieldByID(act, df.GetFieldId())
		if f == nil {
			return Entry{}, fmt.Errorf("%w: table %s: read a data field of unknown id %d", ErrInfo, t.Name, df.GetFieldId())
		}
		var v any
		switch x := df.GetValue().(type) {
		case *pb.DataField_Stream:
			v = x.Stream
		case *pb.DataField_BoolVal:
			v = x.BoolVal
		case *pb.DataField_StrVal:
			v = x.StrVal
		default:
			return Entry{}, fmt.Errorf("%w: table %s field %s: value of type %T is not read by lumina", ErrInfo, t.Name, f.Name, x)
		}
		e.Data = append(e.Data, KV{f.Name, v})
	}
	return e, nil
}
