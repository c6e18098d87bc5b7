// Package p4src holds lumina's P4 program for Tofino (lumina.p4) and its
// P4Info (lumina.p4info.txtpb), embedded so the control plane and the
// software switch target load the same pipeline description.
//
// There is no p4c in lumina's build: the P4Info is kept by hand, and the
// tests check that table, key, action, parameter, register and counter names
// and bit widths agree between the P4 source, the P4Info and the Go target
// (injector). To run on a Tofino, compile lumina.p4 with bf-p4c and use the
// P4Info it emits (docs/tofino.md, later); the names stay the same.
package p4src

import (
	_ "embed"
	"fmt"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

// Source is the P4-16 TNA program.
//
//go:embed lumina.p4
var Source []byte

// P4InfoText is the P4Info of Source in protobuf text format.
//
//go:embed lumina.p4info.txtpb
var P4InfoText []byte

// P4Info parses P4InfoText.
func P4Info() (*p4configv1.P4Info, error) {
	var info p4configv1.P4Info
	if err := prototext.Unmarshal(P4InfoText, &info); err != nil {
		return nil, fmt.Errorf("p4src: parsing lumina.p4info.txtpb: %w", err)
	}
	return &info, nil
}
