package roce

import (
	"encoding/binary"
	"fmt"
	"net"
)

// MAC is a 48-bit Ethernet (EUI-48) address. Its text form, in JSON too,
// is net.HardwareAddr's: six colon-separated hex bytes,
// "02:00:00:00:00:01"; it parses every 6-byte form net.ParseMAC takes.
type MAC [6]byte

// ParseMAC parses a 6-byte MAC address in any form net.ParseMAC takes.
func ParseMAC(s string) (MAC, error) {
	hw, err := net.ParseMAC(s)
	if err != nil {
		return MAC{}, err
	}
	if len(hw) != 6 {
		return MAC{}, fmt.Errorf("MAC address %q is %d bytes, want 6", s, len(hw))
	}
	return MAC(hw), nil
}

// String returns the address as six colon-separated hex bytes.
func (m MAC) String() string { return net.HardwareAddr(m[:]).String() }

// MarshalText implements encoding.TextMarshaler (String's form).
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (ParseMAC).
func (m *MAC) UnmarshalText(b []byte) error {
	v, err := ParseMAC(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// IsZero reports whether m is 00:00:00:00:00:00 (no address).
func (m MAC) IsZero() bool { return m == MAC{} }

// Uint64 returns the address as a 48-bit number, the first byte the most
// significant (a P4 bit<48> field's value; the mirror header's timestamp
// and sequence number).
//
// It reads bytes 0..3, then 4..5: the pieces the compiler copies a MAC in
// (MAC(frame[6:12]) is a copy to the stack). A load across both pieces,
// such as bytes 2..5, cannot take its bytes from the two pending stores
// and waits for them to reach the cache (a failed store forwarding, see
// Intel's optimization manual, "Store Forwarding"): ~10 ns each time.
func (m MAC) Uint64() uint64 {
	return uint64(binary.BigEndian.Uint32(m[0:]))<<16 | uint64(binary.BigEndian.Uint16(m[4:]))
}

// MACFromUint64 returns the address whose Uint64 is the low 48 bits of v.
func MACFromUint64(v uint64) MAC {
	var m MAC
	binary.BigEndian.PutUint16(m[0:], uint16(v>>32))
	binary.BigEndian.PutUint32(m[2:], uint32(v))
	return m
}
