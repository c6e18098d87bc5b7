package config

import (
	"errors"
	"strings"
	"testing"
)

// Validate refuses a test built in code where Parse refuses the file.
func TestValidate(t *testing.T) {
	if err := New("ok").Validate(); err != nil {
		t.Fatalf("New(ok).Validate() = %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Test)
		want string
	}{
		{"mtu", func(t *Test) { t.Traffic.MTU = 1500 }, "want 256, 512, 1024, 2048 or 4096, got 1500"},
		{"num-qps", func(t *Test) { t.Traffic.NumQPs = 0 }, "num-qps"},
		{"event beyond the message", func(t *Test) {
			t.Traffic.Events = []Event{{Msg: 0, PSN: 100, Type: EventDrop, Iter: 1}}
		}, "psn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := New("bad")
			tc.mod(x)
			err := x.Validate()
			var el ErrorList
			if !errors.As(err, &el) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bad.yaml:") {
				t.Errorf("Validate() = %v, want an ErrorList at bad.yaml mentioning %q", err, tc.want)
			}
		})
	}
}
