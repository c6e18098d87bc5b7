package controlplane

import (
	"fmt"
	"strings"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/status"
)

// describe expands a P4Runtime batch error (UNKNOWN with one p4.v1.Error
// per update) into the failing updates' codes and messages.
func describe(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var parts []string
	for i, d := range st.Proto().GetDetails() {
		var pe p4v1.Error
		if d.UnmarshalTo(&pe) == nil && pe.GetCanonicalCode() != 0 {
			parts = append(parts, fmt.Sprintf("update %d: code %d: %s", i, pe.GetCanonicalCode(), pe.GetMessage()))
		}
	}
	if len(parts) == 0 {
		return err
	}
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return fmt.Errorf("%w [%s]", err, strings.Join(parts, "; "))
}
