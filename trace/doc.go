// Package trace reads and writes packet traces: the mirror copies captured
// by lumina's dumpers, merged traces, and captures users bring from other
// tools.
//
// # Formats
//
// Two writers produce files that Wireshark, tcpdump and gopacket read:
//
//   - PcapWriter: classic pcap, little-endian, version 2.4, with the
//     nanosecond magic 0xa1b23c4d.
//   - PcapngWriter: pcapng with one little-endian section and one interface
//     whose if_tsresol is 9 (nanoseconds); packets are Enhanced Packet
//     Blocks.
//
// Neither writer buffers: each WritePacket makes two (pcap) or three
// (pcapng) Write calls on the io.Writer it was given, and allocates nothing.
// Give them a *bufio.Writer when writing to a file, and Flush it at the end.
// Timestamps are nanoseconds since the Unix epoch and must not be negative.
//
// One Reader, from NewReader, reads both formats, detected by the magic
// number:
//
//   - pcap with microsecond or nanosecond timestamps, in either byte order.
//     The upper (FCS) bits of the link-type field are ignored.
//   - pcapng: any number of sections in either byte order; Interface
//     Description Blocks with if_tsresol (base 10 or base 2) and
//     if_tsoffset; Enhanced, Simple and obsolete Packet Blocks. Other blocks
//     (name resolution, interface statistics, decryption secrets, custom)
//     are skipped. Interface IDs are per section, as the format says.
//
// ReadFile streams a file through a callback.
//
// # Buffer reuse
//
// Reader.Next returns a Packet whose Data aliases one buffer owned by the
// Reader. It is overwritten by the next call to Next (and, with ReadFile,
// after the callback returns): copy it, e.g. with bytes.Clone, to keep it.
// The buffer grows to the largest packet seen and is then reused, so Next
// does not allocate in steady state; the tests and benchmarks check this.
//
// # Robustness and errors
//
// The reader never panics and never trusts a length field with memory: a
// captured length above MaxPacketSize (256 KiB) or a pcapng block longer
// than MaxBlockSize (16 MiB) is an error, and buffers grow only as bytes
// actually arrive. Failures wrap one of the sentinel errors, to be matched
// with errors.Is:
//
//   - ErrNotPcap: empty input or an unknown magic number. The message
//     quotes none of the input's bytes: the input may be any file a link
//     pointed to.
//   - ErrTruncated: the input ends inside a header, record or block, as when
//     a capture is killed mid-write. Every complete packet before it has been
//     returned first. The message gives the packet index, the record's byte
//     offset and the byte counts, for example
//     "trace: packet 17 at offset 12345: truncated record (want 98 bytes, have 40)".
//   - ErrCorrupt: impossible lengths, versions or options, a trailing
//     pcapng block length that differs from the leading one, a packet on an
//     interface that was never described.
//   - ErrInvalid: a writer argument the format cannot hold.
//
// A clean end of input is io.EOF. Errors are sticky: once Next has failed,
// it keeps returning the same error.
//
// Some writers record a captured length above the original length or above
// the file's snaplen; both are accepted, and Packet.OrigLen is raised to the
// captured length.
//
// # Concurrency
//
// Readers and writers are not safe for concurrent use; use one per
// goroutine.
//
// # Merging dumper files
//
// Merge and MergeFiles combine the dumpers' files into one trace ordered by
// the mirror sequence number the injector writes into each copy's source MAC
// (MirrorFields). In a fabric each logical switch numbers its own copies
// and names itself in the same field (MirrorSwitchSeq); the merged trace is
// then ordered by (timestamp, switch id, sequence number), through
// per-switch temporary files (see Merge). The merge streams: it holds one
// pending packet per source and switch, never the trace. Sequence numbers
// wrap; SeqSpace describes the counter's range (40 bits per switch by
// default; SeqSpaceLumina31 for the public tool's 1..2^31-1 counter) and
// all comparisons are modular. Merge never reorders packets
// within one source: a corrupt source's out-of-order packet is emitted as is,
// counted in MergeStats.OutOfOrder, and left for the integrity check
// (analyzers/integrity) to report.
//
// A merged trace holds two kinds of mirror copies, in one sequence: RoCE
// copies (an Ethernet/IP/UDP frame whose MACs carry the metadata) and
// wrapped copies of frames that are not IP, the PFC and PAUSE frames the
// switch received or sent (EtherType EtherTypeMACMirror, 0x88B5, behind the
// same two metadata fields; see roce.ParseMACMirror). Merge and MirrorFields
// treat them alike; IsMACMirror (Packet.IsMACMirror) tells them apart. A
// foreign capture that uses EtherType 0x88B5 (IEEE's local experimental
// EtherType 1) for something else would be taken for wrapped copies.
package trace
