package roce

import (
	"fmt"
	"testing"
)

func TestMTUs(t *testing.T) {
	if got := fmt.Sprintf("%d, %d, %d, %d or %d", MTUs[0], MTUs[1], MTUs[2], MTUs[3], MTUs[4]); got != MTUChoices {
		t.Errorf("MTUChoices %q, MTUs spell %q", MTUChoices, got)
	}
	for n, want := range map[int]int{256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5, 0: 0, 1500: 0, 9000: 0, 128: 0, 8192: 0} {
		e, ok := MTUEnum(n)
		if ok != (want != 0) || ok && e != want || ValidMTU(n) != ok {
			t.Errorf("MTUEnum(%d) = %d, %v (ValidMTU %v), want %d", n, e, ok, ValidMTU(n), want)
		}
	}
}

func TestPauseReactionBoundNs(t *testing.T) {
	for _, tt := range []struct {
		bps    int64
		ns     int64
		listed bool
	}{
		{100e9, 2017, true}, // 394 quanta
		{40e9, 1510, true},  // 118
		{10e9, 3072, true},  // 60, the stricter of 60 and 67
		{100e6, 5120, true}, // 1
		{30e9, 2013, false}, // unlisted: the nearest listed speed above, 40 Gb/s: 118 quanta at 30 Gb/s
		{800e9, 579, false}, // beyond the table: 400 Gb/s's 905
		{400e9, 1158, true}, // 905
	} {
		if ns, listed := PauseReactionBoundNs(tt.bps); ns != tt.ns || listed != tt.listed {
			t.Errorf("PauseReactionBoundNs(%d) = %d, %v; want %d, %v", tt.bps, ns, listed, tt.ns, tt.listed)
		}
	}
}
