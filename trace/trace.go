package trace

import (
	"errors"
	"strconv"
)

// Sentinel errors. The reader and writers always wrap them with context
// (packet index, byte offset, lengths), so match them with errors.Is rather
// than by comparing error strings.
var (
	// ErrNotPcap means the input is neither a pcap nor a pcapng file: it is
	// empty or starts with an unknown magic number (the message shows it).
	ErrNotPcap = errors.New("not a pcap or pcapng file")

	// ErrTruncated means the input ends inside a file header, record header,
	// block or packet. All complete packets before that point have already
	// been returned by Reader.Next. The message names the packet index, the
	// byte offset of the record and how many bytes were wanted and present.
	ErrTruncated = errors.New("truncated")

	// ErrCorrupt means a length, version or option in the input is
	// impossible: a captured length above MaxPacketSize, a pcapng block length
	// that is not a multiple of 4, below 12 or above MaxBlockSize, a trailing
	// block length that differs from the leading one, a packet that names an
	// interface that was never described, and the like.
	ErrCorrupt = errors.New("corrupt")

	// ErrInvalid means a writer was called with an argument it cannot encode:
	// a negative timestamp or length, a snaplen out of range, a timestamp
	// beyond what the format holds.
	ErrInvalid = errors.New("invalid argument")
)

const (
	// MaxPacketSize is the largest captured packet length the reader accepts
	// and the largest snaplen the writers accept. A record that claims more
	// captured bytes is reported as ErrCorrupt, so a damaged length field
	// never makes the reader allocate more than this.
	MaxPacketSize = 256 << 10

	// MaxBlockSize is the largest pcapng block the reader accepts. Longer
	// blocks are reported as ErrCorrupt. Skipped blocks are discarded without
	// being buffered; only interface and section headers are buffered, and
	// only as their bytes actually arrive.
	MaxBlockSize = 16 << 20

	// DefaultSnaplen is the snaplen the writers use when given 0.
	DefaultSnaplen = 262144
)

// LinkType is a LINKTYPE_ value from the tcpdump.org link-layer header type
// registry: the kind of header each packet's data starts with. The zero
// value is LINKTYPE_NULL (BSD loopback).
type LinkType uint16

// Link types lumina writes or commonly meets.
const (
	LinkTypeNull     LinkType = 0   // BSD loopback
	LinkTypeEthernet LinkType = 1   // IEEE 802.3 Ethernet
	LinkTypeRaw      LinkType = 101 // raw IPv4 or IPv6
	LinkTypeLinuxSLL LinkType = 113 // Linux "cooked" capture v1
)

// String returns the link type's registry name, or "LinkType(N)".
func (t LinkType) String() string {
	switch t {
	case LinkTypeNull:
		return "NULL"
	case LinkTypeEthernet:
		return "ETHERNET"
	case LinkTypeRaw:
		return "RAW"
	case LinkTypeLinuxSLL:
		return "LINUX_SLL"
	}
	return "LinkType(" + strconv.Itoa(int(t)) + ")"
}

// Format names a capture file format.
type Format string

// The formats the reader understands.
const (
	FormatPcap   Format = "pcap"
	FormatPcapng Format = "pcapng"
)

// Packet is one captured frame as returned by Reader.Next.
type Packet struct {
	// Index is the 0-based frame number within the file, counted over all
	// packet records (across pcapng sections and interfaces).
	Index int

	// TimeNs is the capture time in nanoseconds since the Unix epoch, after
	// applying the interface's if_tsresol and if_tsoffset in pcapng. It is 0
	// for pcapng Simple Packet Blocks, which carry no timestamp.
	TimeNs int64

	// Data holds the captured bytes. It aliases the Reader's internal buffer
	// and is valid only until the next call to Next: copy it (bytes.Clone)
	// to keep it.
	Data []byte

	// OrigLen is the packet's length on the wire. It is never less than
	// len(Data), even when a writer recorded a smaller value.
	OrigLen int

	// LinkType is the link type of the interface the packet was captured on.
	LinkType LinkType

	// Interface is the pcapng interface ID within the packet's section; it is
	// always 0 for pcap.
	Interface int
}
