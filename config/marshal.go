package config

import (
	"bytes"
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Marshal returns the canonical YAML of t: every key written with lumina's
// spelling (num-qps, not num-connections; dumpers, not mirrors), defaults
// included, keys in a fixed order. For a Test returned by Parse,
// Parse(t.File, t.Marshal()) returns an equal Test, except for Event.Pos.
func (t *Test) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(marshalSection(topSection, reflect.ValueOf(t).Elem())); err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("config: marshal: %w", err)
	}
	return buf.Bytes(), nil
}

// marshalSection writes s, a struct of sec.typ, as the mapping of sec's keys.
func marshalSection(sec *section, s reflect.Value) *yaml.Node {
	m := mapping()
	for _, k := range sec.keys {
		var v *yaml.Node
		switch {
		case k.enc != nil:
			if v = k.enc(s); v == nil {
				continue // not in this form (the two-host or the hosts form)
			}
		case k.field == "":
			continue
		default:
			f := s.FieldByName(k.field)
			v = marshalValue(f, k.sub)
			if k.omit && (v.Kind == yaml.ScalarNode && f.Equal(k.defValue(f.Type())) || v.Kind != yaml.ScalarNode && len(v.Content) == 0) {
				continue
			}
		}
		m.Content = append(m.Content, str(k.name), v)
	}
	return m
}

// marshalValue writes f by its Go type; sub describes structs and lists of
// structs.
func marshalValue(f reflect.Value, sub *section) *yaml.Node {
	if s, ok := f.Interface().(fmt.Stringer); ok {
		return str(s.String())
	}
	switch f.Kind() {
	case reflect.Pointer:
		if f.IsNil() {
			return mapping()
		}
		return marshalValue(f.Elem(), sub)
	case reflect.String:
		return str(f.String())
	case reflect.Bool:
		return scalar("!!bool", strconv.FormatBool(f.Bool()))
	case reflect.Uint64:
		return scalar("!!int", strconv.FormatUint(f.Uint(), 10))
	case reflect.Float64:
		v := strconv.FormatFloat(f.Float(), 'f', -1, 64)
		if !strings.ContainsAny(v, ".eEnN") {
			v += ".0"
		}
		return scalar("!!float", v)
	case reflect.Struct:
		return marshalSection(sub, f)
	case reflect.Slice:
		l := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if f.Type().Elem().Kind() == reflect.Int {
			l.Style = yaml.FlowStyle
		}
		for i := range f.Len() {
			l.Content = append(l.Content, marshalValue(f.Index(i), sub))
		}
		return l
	case reflect.Map:
		m := mapping()
		keys := f.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) })
		for _, k := range keys {
			m.Content = append(m.Content, num(int(k.Int())), marshalValue(f.MapIndex(k), sub))
		}
		return m
	}
	return num(int(f.Int()))
}

func encNumQPs(s reflect.Value) *yaml.Node {
	tr := trafficOf(s)
	if tr.Verb == VerbSendRead {
		return str(fmt.Sprintf("%d,%d", tr.NumQPs-tr.NumReadQPs, tr.NumReadQPs))
	}
	return num(tr.NumQPs)
}

func encPSN(s reflect.Value) *yaml.Node {
	if psn := s.Interface().(Event).PSN; psn != AllPackets {
		return num(psn)
	}
	return str("all")
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func scalar(tag, v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}

func str(s string) *yaml.Node {
	n := scalar("!!str", s)
	if strings.ContainsAny(s, "\n\r") || strings.TrimSpace(s) != s {
		// Keep exotic strings byte-exact through a round trip.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func num(i int) *yaml.Node { return scalar("!!int", strconv.Itoa(i)) }
