package controlplane

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestElectionIDInUse: Dial waits out a refusal of its election ID by a
// server that still holds a just-closed stream with it, and nothing else.
func TestElectionIDInUse(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("controlplane: P4Runtime stream to x: %w", status.Error(codes.InvalidArgument, `election ID 1 already used by another client of role ""`)), true},
		{status.Error(codes.InvalidArgument, "Election id already exists"), true},
		{status.Error(codes.InvalidArgument, "device id 3 unknown"), false},
		{status.Error(codes.PermissionDenied, "election ID 1 is not primary"), false},
		{errors.New("election"), false},
		{nil, false},
	} {
		if got := electionIDInUse(tc.err); got != tc.want {
			t.Errorf("electionIDInUse(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
