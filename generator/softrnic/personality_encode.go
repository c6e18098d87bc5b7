package softrnic

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// MarshalPersonality returns p as a personality file that
// ParsePersonality reads back as p: yaml.v3's encoding of the
// struct (the yaml tags of Personality and the MarshalYAML methods of
// Duration and CNPScope define the format), with the fields
// tagged omitempty written even when empty, since ParsePersonality starts
// from "spec" and would otherwise keep spec's. The zero Personality (the
// RNIC's default, "spec") is empty.
func MarshalPersonality(p Personality) []byte {
	if reflect.ValueOf(p).IsZero() {
		return nil
	}
	var n yaml.Node
	if err := n.Encode(p); err != nil {
		// Only a field of a type yaml cannot encode (a func, a channel)
		// gets here: a programming error that the round-trip test catches.
		panic(fmt.Sprintf("softrnic: encoding personality %q: %v", p.Name, err))
	}
	has := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		has[n.Content[i].Value] = true
	}
	if !has["description"] {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: "description"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""})
	}
	if !has["adaptive"] {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: "adaptive"},
			&yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle})
	}
	b, err := yaml.Marshal(&n)
	if err != nil {
		panic(fmt.Sprintf("softrnic: encoding personality %q: %v", p.Name, err))
	}
	return b
}
