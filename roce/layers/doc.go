// Package layers adapts the roce wire format to gopacket
// (github.com/gopacket/gopacket): a RoCE layer (BTH, extended transport
// headers, payload, pad, ICRC) registered on UDP port 4791, implementing
// gopacket.DecodingLayer and gopacket.SerializableLayer.
//
// Package roce itself does not import gopacket; import this package for its
// side effect (the UDP 4791 registration) when decoding with gopacket.
//
// Pitfall: the ICRC covers the IP and UDP headers, which gopacket serializes
// after the RoCE layer, so SerializeTo writes RoCE.ICRC as given; call
// FixICRC on the finished frame. Do not let gopacket compute a UDP checksum
// (SerializeOptions.ComputeChecksums with a network layer set): RoCE senders
// send 0.
package layers
