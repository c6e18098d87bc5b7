package generator_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/netlumina/lumina/generator"
)

// WithDefaults is the one place a QP's defaults are applied (the software
// RNIC's Connect and verbs' resolveAttrs both call it): nil takes the
// default, any value given is kept, zero included.
func TestConnectAttrWithDefaults(t *testing.T) {
	base := generator.ConnectAttr{RemoteQPN: 0x12, RemotePSN: 0x1abcdef, RemoteIP: netip.MustParseAddr("10.0.0.2")}
	def := generator.QPAttr{RemoteQPN: 0x12, RemotePSN: 0xabcdef, RemoteIP: base.RemoteIP, MTU: 1024, Timeout: 14,
		RetryCnt: 7, RNRRetry: 7, MinRNRTimer: 12, MaxRdAtomic: 16, TrafficClass: 2}
	tests := []struct {
		name string
		mod  func(*generator.ConnectAttr)
		want func(*generator.QPAttr)
		err  bool
	}{
		{"defaults", func(*generator.ConnectAttr) {}, func(*generator.QPAttr) {}, false},
		{"timeout 5", func(a *generator.ConnectAttr) { a.Timeout = new(uint8(5)) }, func(q *generator.QPAttr) { q.Timeout = 5 }, false},
		{"zeros given", func(a *generator.ConnectAttr) {
			a.Timeout, a.RetryCnt, a.RNRRetry, a.MinRNRTimer, a.TrafficClass = new(uint8(0)), new(uint8(0)), new(uint8(0)), new(uint8(0)), new(uint8(0))
		}, func(q *generator.QPAttr) {
			q.Timeout, q.RetryCnt, q.RNRRetry, q.MinRNRTimer, q.TrafficClass = 0, 0, 0, 0, 0
		}, false},
		{"MTU 4096, 4 READs", func(a *generator.ConnectAttr) { a.MTU, a.MaxRdAtomic = 4096, 4 }, func(q *generator.QPAttr) { q.MTU, q.MaxRdAtomic = 4096, 4 }, false},
		{"MTU 1500", func(a *generator.ConnectAttr) { a.MTU = 1500 }, nil, true},
		{"timeout 32", func(a *generator.ConnectAttr) { a.Timeout = new(uint8(32)) }, nil, true},
		{"retry_cnt 8", func(a *generator.ConnectAttr) { a.RetryCnt = new(uint8(8)) }, nil, true},
		{"rnr_retry 8", func(a *generator.ConnectAttr) { a.RNRRetry = new(uint8(8)) }, nil, true},
		{"min_rnr_timer 32", func(a *generator.ConnectAttr) { a.MinRNRTimer = new(uint8(32)) }, nil, true},
		{"QPN 0", func(a *generator.ConnectAttr) { a.RemoteQPN = 0 }, nil, true},
		{"QPN 2^24", func(a *generator.ConnectAttr) { a.RemoteQPN = 1 << 24 }, nil, true},
		{"no remote IP", func(a *generator.ConnectAttr) { a.RemoteIP = netip.Addr{} }, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := base
			tt.mod(&a)
			got, err := a.WithDefaults()
			if tt.err {
				if !errors.Is(err, generator.ErrBadConnect) {
					t.Errorf("WithDefaults error = %v, want ErrBadConnect", err)
				}
				return
			}
			want := def
			tt.want(&want)
			if err != nil || got != want {
				t.Errorf("WithDefaults = %+v, %v; want %+v", got, err, want)
			}
		})
	}
}
