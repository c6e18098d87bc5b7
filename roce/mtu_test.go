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
