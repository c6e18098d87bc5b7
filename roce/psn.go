package roce

// PSN is a 24-bit packet sequence number. All arithmetic is modulo 2^24;
// comparisons are valid when the two PSNs are less than 2^23 apart, the
// window the IBA guarantees (rxe compares with (s32)((a-b)<<8)).
type PSN uint32

// PSNMask masks a value to 24 bits.
const PSNMask = 1<<24 - 1

// Add returns p+n modulo 2^24 (n may be negative).
func (p PSN) Add(n int) PSN { return PSN((int64(p) + int64(n)) & PSNMask) }

// Next returns p+1 modulo 2^24.
func (p PSN) Next() PSN { return (p + 1) & PSNMask }

// Sub returns the signed distance p−q in (−2^23, 2^23]: positive when p
// comes after q.
func (p PSN) Sub(q PSN) int { return int(int32(uint32(p-q)<<8) >> 8) }

// LessThan reports whether p comes before q.
func (p PSN) LessThan(q PSN) bool { return p.Sub(q) < 0 }

// LessThanEq reports whether p comes before q or equals it.
func (p PSN) LessThanEq(q PSN) bool { return p.Sub(q) <= 0 }

// InWindow reports whether p lies in [start, start+size) modulo 2^24.
func (p PSN) InWindow(start PSN, size uint32) bool {
	return uint32(p-start)&PSNMask < size
}

// Valid reports whether p fits in 24 bits.
func (p PSN) Valid() bool { return p <= PSNMask }
