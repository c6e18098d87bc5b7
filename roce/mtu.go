package roce

import "slices"

// MTUs are the path MTUs InfiniBand defines (IBA Vol. 1 §7.7.9, the PMTU
// field of PortInfo; libibverbs enum ibv_mtu): 256 to 4096 bytes. RoCE
// uses the same set; a frame's payload is at most the path MTU.
var MTUs = [...]int{256, 512, 1024, 2048, 4096}

// MTUEnum returns the ibv_mtu code of a path MTU in bytes (1 = 256 …
// 5 = 4096) and whether n is one of MTUs.
func MTUEnum(n int) (int, bool) {
	i := slices.Index(MTUs[:], n)
	return i + 1, i >= 0
}

// ValidMTU reports whether n bytes is an InfiniBand path MTU (one of MTUs).
func ValidMTU(n int) bool { return slices.Contains(MTUs[:], n) }

// MTUChoices is MTUs as error messages name them: "256, 512, 1024, 2048
// or 4096".
const MTUChoices = "256, 512, 1024, 2048 or 4096"
