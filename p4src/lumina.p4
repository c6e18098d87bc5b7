/* lumina.p4 — the Lumina event injector for Intel Tofino (TNA), Tofino 1 and 2.
 *
 * Forwards traffic between the hosts under test by destination MAC (with
 * proxy ARP), tracks a transmission round (ITER) per RoCEv2 connection,
 * drops / ECN-marks / corrupts exactly the data packets addressed by
 * (ingress port, destination QPN, PSN, ITER), and mirrors EVERY RoCEv2
 * packet, before the drop takes effect, to a pool of up to 16 dumper ports
 * chosen by weighted round robin. Egress rewrites each mirror copy: event
 * type in the IPv4 TTL bits 0..2, 48-bit mirror sequence number in the
 * source MAC, 48-bit ingress timestamp (ns) in the destination MAC, UDP
 * destination port = the configured mirror port, UDP source port random,
 * original source port in the UDP checksum field, and the depth of the
 * egress queue the packet joined (roce.DepthCode, 11 bits: its top 5 bits
 * in the TTL bits 3..7, its low 6 bits in the BTH's resv6).
 *
 * Queue depth and ECN (docs/pfc.md, "ECN by queue depth"): a packet that is
 * forwarded is mirrored from egress (E2E mirror), where Tofino reports the
 * depth of its queue when it was enqueued (eg_intr_md.enq_qdepth, in cells,
 * not counting the packet itself); its sequence number and timestamp are
 * still taken in ingress and bridged. There, before the mirror, RED marks
 * ECT packets CE by that depth with the thresholds of Egress.ecn_red, so
 * the copy shows the mark. A dropped packet is mirrored from ingress, with
 * depth 0. Mirror sessions must therefore be configured for both
 * directions. The software target (injector.(*Switch).admit) measures the
 * same depth in bytes for the copy and in cells for RED; here it is
 * cells × LUMINA_CELL_BYTES.
 *
 * Events beyond loss (docs/tofino.md, "Events beyond loss"): delay and
 * reorder hold a packet by recirculating it through the pipe's
 * recirculation port until its release time, or until enough later packets
 * of its connection were forwarded; duplicate forwards the packet and then
 * its copies, one per recirculation pass, each replicated by the PRE to the
 * recirculation port (multicast group DUP_MCAST_GRP + pipe). A held packet
 * is mirrored when it leaves, a copy when it is made, so the mirror trace is
 * in wire order.
 *
 * Pauses (docs/tofino.md §8): the control plane programs the packet
 * generator through BfRt (p4src/tofino/bfrt) with one template per pause
 * event, a pause_gen_h (the host's port) and the PFC frame; a generated
 * packet arrives on the pipe's pktgen port behind its 6-byte header,
 * leaves by that port as the bare PFC frame and is mirrored from egress
 * as sent with EVENT_PAUSE in the MAC mirror wrapper (mac_mirror_h), as
 * the software target's injected pauses are (injector.(*Switch).pfcInject).
 *
 * No p4c runs in lumina's CI: p4src/lumina.p4info.txtpb is kept by hand and
 * p4src_test.go checks that the names and bit widths of the tables, keys,
 * actions, parameters, registers and counters here, in the P4Info and in the
 * Go software target (injector/) agree. The Go target is the executable
 * specification of this program; the comments of each block say which Go
 * function implements it.
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

/* The pipe-local recirculation port (device port within the pipe, bits 6:0;
 * the pipe, bits 8:7, is the packet's own). Tofino 1: port 68 of every pipe
 * is a recirculation port in loopback. Tofino 2: 6 is the default here, to
 * be checked against the SDE's port map (docs/tofino.md); override with
 * bf-p4c -DLUMINA_RECIRC_PORT=N. */
/* Bytes per queue cell of the traffic manager, which counts queue depths
 * in cells (eg_intr_md.enq_qdepth): 80 on Tofino 1 and 176 on Tofino 2
 * (assumed from the published buffer organisation, to be checked against
 * the SDE; override with bf-p4c -DLUMINA_CELL_BYTES=N together with the
 * shift-add in Egress, which multiplies by the default). */
#ifndef LUMINA_CELL_BYTES
#if __TARGET_TOFINO__ == 2
#define LUMINA_CELL_BYTES 176
#else
#define LUMINA_CELL_BYTES 80
#endif
#endif

#ifndef LUMINA_RECIRC_PORT
#if __TARGET_TOFINO__ == 2
#define LUMINA_RECIRC_PORT 6
#else
#define LUMINA_RECIRC_PORT 68
#endif
#endif

/* The pipe-local port the packet generator's packets arrive on: the pktgen
 * port whose generator the control plane enables and which it writes as
 * each app's pipe_local_source_port (p4src/tofino/bfrt
 * Chip.DefaultPktgenPort, PlanPausesOn). Its own default per chip, not
 * the recirculation port's: 68 on Tofino 1 (pktgen ports 68..71 of every
 * pipe; 68 is also the recirculation port there), 6 on Tofino 2 (pktgen
 * ports 0..7 of every pipe). Overriding it (bf-p4c -DLUMINA_PKTGEN_PORT=N)
 * needs `lumina run --pktgen-port N`; overriding LUMINA_RECIRC_PORT does
 * not move it. Generated pauses are told from held packets by their first
 * byte (IngressParser). */
#ifndef LUMINA_PKTGEN_PORT
#if __TARGET_TOFINO__ == 2
#define LUMINA_PKTGEN_PORT 6
#else
#define LUMINA_PKTGEN_PORT 68
#endif
#endif

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<16> UDP_PORT_ROCE  = 4791;

const bit<8> EVENT_NONE    = 0;
const bit<8> EVENT_DROP    = 1;
const bit<8> EVENT_ECN     = 2;
const bit<8> EVENT_CORRUPT = 3;
const bit<8> EVENT_DELAY     = 4;
const bit<8> EVENT_REORDER   = 5;
const bit<8> EVENT_DUPLICATE = 6;
const bit<8> EVENT_PAUSE     = 7;   // a pause of the test (pfc-events type pause)

const bit<16> ETHERTYPE_LUMINA_MIRROR = 0x88B5; // roce.EtherTypeLuminaMirror
const bit<8>  MAC_MIRROR_SENT = 1;              // roce.MACMirrorSent

const bit<8> PKT_NORMAL = 1;
const bit<8> PKT_MIRROR = 2;
const bit<8> PKT_HOLD   = 3;   // a hold_h follows the bridge header
const bit<8> PKT_MIRROR_HELD = 4; // mirror copy of a recirculated packet: hold_h, then Ethernet
const bit<8> PKT_MIRROR_MAC  = 5; // mirror copy of a MAC Control frame the switch sent (a pause)

/* hold_h.kind */
const bit<8> HOLD_DELAY     = 1;
const bit<8> HOLD_REORDER   = 2;
const bit<8> HOLD_DUPLICATE = 3;

/* meta.conn_op: the one access to conn_forwarded of a pass */
const bit<2> CONN_NONE = 0;
const bit<2> CONN_BUMP = 1;   // a packet of the connection leaves: count it
const bit<2> CONN_READ = 2;   // a packet is put on hold for reordering: read the count
const bit<2> CONN_TRY  = 3;   // a held packet polls: release (and count) if enough overtook it

/* Multicast groups DUP_MCAST_GRP + pipe (0..3): one replica, the pipe's
 * recirculation port. Created by the control plane through the PRE. */
const bit<16> DUP_MCAST_GRP = 0xFF00;

const int NUM_CONNS    = 16384;
const int EVENT_SLOTS  = 65536;
const int WRR_SLOTS    = 256;
const int NUM_PORTS    = 512;
const int NUM_SWITCHES = 32;    // logical switches (Ingress.port_switch)
const int FABRIC_ROUTES = 16384;

header ethernet_h { mac_addr_t dst_addr; mac_addr_t src_addr; bit<16> ether_type; }
header vlan_h     { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> ether_type; }
header arp_h {
    bit<16> hw_type; bit<16> proto_type; bit<8> hw_len; bit<8> proto_len; bit<16> opcode;
    mac_addr_t sender_hw_addr; ipv4_addr_t sender_proto_addr;
    mac_addr_t target_hw_addr; ipv4_addr_t target_proto_addr;
}
header ipv4_h {
    bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset; bit<8> ttl;
    bit<8> protocol; bit<16> hdr_checksum; ipv4_addr_t src_addr; ipv4_addr_t dst_addr;
}
header udp_h { bit<16> src_port; bit<16> dst_port; bit<16> length; bit<16> checksum; }
header bth_h {
    bit<8> opcode; bit<1> se; bit<1> migreq; bit<2> pad_count; bit<4> tver; bit<16> pkey;
    bit<1> fecn; bit<1> becn; bit<6> resv6; bit<24> dest_qp; bit<1> ack_req; bit<7> resv7; bit<24> psn;
}

/* Recirculation state of a held packet (delay, reorder) or of a duplicate's
 * chain of copies. Emitted in front of the Ethernet header only towards the
 * recirculation port; parsed on the recirculation port's ingress. deadline
 * is on the ingress global timestamp clock (ns, 48 bits): the release time
 * of a delay, the max-hold expiry of a reorder. */
header hold_h {
    bit<8>   kind;
    bit<8>   copies;
    bit<2>   pad;
    bit<5>   switch_id; // the logical switch of the first pass's ingress port
    PortId_t port;
    bit<16>  conn_idx;
    bit<32>  target;
    bit<48>  deadline;
    bit<48>  arrived;   // ingress global timestamp of the first pass
}

/* lumina's header in the packet generator's pause template, after the
 * 6-byte pktgen header and before the PFC frame (p4src/tofino/bfrt
 * Pause.Template, docs/tofino.md §8): where the pause goes. */
header pause_gen_h {
    bit<2>   pad;
    bit<5>   switch_id; // the logical switch of port: its mirror sequence
    PortId_t port;      // the host's port: the pause leaves by it
}

/* The wrapper of a MAC Control frame's mirror copy (roce.AppendMACMirror,
 * 18 bytes): timestamp, sequence field, EtherType 0x88B5, event, flags,
 * the port the frame left by; the frame follows. */
header mac_mirror_h {
    bit<48> timestamp;
    bit<48> seq;
    bit<16> ether_type;
    bit<8>  event;
    bit<8>  flags;
    bit<16> port;
}

/* Bridged to egress with every copy: mirror copies carry their metadata.
 * A forwarded packet carries the metadata of its own copy (eg_mirror = 1),
 * which egress mirrors once the packet is in its queue. */
header mirror_bridge_h {
    bit<8>  pkt_type;
    bit<8>  event;
    bit<48> timestamp;
    bit<48> seq;
    bit<48> held;       // a held packet's copy: timestamp minus the arrival
    bit<5>  pad_q;
    bit<11> qdepth;     // the copy's depth code (roce.DepthCode), set in egress
    bit<5>  pad_m;
    bit<1>  eg_mirror;  // mirror this packet from egress, to session
    MirrorId_t session;
}

struct headers_t {
    mirror_bridge_h bridge;
    hold_h     hold;
    pktgen_timer_header_t pktgen;  // a generated pause: removed in ingress
    pause_gen_h pause_gen;         // idem
    mac_mirror_h mac_mirror;       // a pause's mirror copy: added in egress
    ethernet_h ethernet;
    vlan_h     vlan;
    arp_h      arp;
    ipv4_h     ipv4;
    udp_h      udp;
    bth_h      bth;
}

struct ig_meta_t {
    bit<1>      tracked;
    bit<1>      iter_scope;      // 0 message (public tool), 1 connection (paper §3.4)
    bit<1>      responses;       // the entry is the responder's ACK/NAK direction
    bit<16>     conn_idx;
    bit<16>     iter;
    bit<1>      first_of_msg;
    bit<8>      event;
    bit<8>      wrr_slot;
    bit<8>      wrr_size;
    bit<32>     seq_lo;
    bit<8>      seq_hi;          // Seq < 2^40: 8 bits above seq_lo
    MirrorId_t  mirror_session;
    bit<1>      fwd;             // l2_forward chose an egress port
    bit<1>      hold_in;         // this pass came from the recirculation port
    bit<8>      hold_kind;       // set by delay_event / reorder_event
    bit<32>     hold_ns;         // delay_ns or max_hold_ns
    bit<8>      overtakers;
    bit<8>      dup_copies;      // set by duplicate_event
    bit<2>      conn_op;
    bit<32>     fwd_seen;
    bit<1>      release;
    bit<1>      mirror_it;
    bit<5>      switch_id;       // the logical switch of the ingress port (port_switch)
    bit<1>      pause_out;       // a pause of the packet generator
    mirror_bridge_h mirror;
}

struct eg_meta_t { mirror_bridge_h mirror; MirrorId_t mirror_session; }

parser IngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t meta,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
        /* A recirculation port carries recirculated packets, which start
         * with a hold_h (first byte: kind, 1..3). The pktgen port (on
         * Tofino 1 the recirculation port by default) carries the packet generator's
         * pauses, which start with its 6-byte timer header (first byte:
         * pipe << 3 | app on Tofino 1, pipe << 4 | app on Tofino 2; the
         * control plane never uses apps 1..3, so never 1..3), then a
         * pause_gen_h and the PFC frame. */
        transition select(ig_intr_md.ingress_port, pkt.lookahead<bit<8>>()) {
            (LUMINA_RECIRC_PORT &&& DEVPORT_PORT_MASK, HOLD_DELAY):     parse_hold;
            (LUMINA_RECIRC_PORT &&& DEVPORT_PORT_MASK, HOLD_REORDER):   parse_hold;
            (LUMINA_RECIRC_PORT &&& DEVPORT_PORT_MASK, HOLD_DUPLICATE): parse_hold;
            (LUMINA_PKTGEN_PORT &&& DEVPORT_PORT_MASK, _):              parse_pktgen;
            default: parse_ethernet;
        }
    }
    state parse_hold { pkt.extract(hdr.hold); transition parse_ethernet; }
    state parse_pktgen {
        pkt.extract(hdr.pktgen);
        pkt.extract(hdr.pause_gen);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP:  parse_arp;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP:  parse_arp;
            default: accept;
        }
    }
    state parse_arp  { pkt.extract(hdr.arp); transition accept; }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCE: parse_bth;
            default: accept;
        }
    }
    state parse_bth { pkt.extract(hdr.bth); transition accept; }
}

control Ingress(inout headers_t hdr, inout ig_meta_t meta,
                in ingress_intrinsic_metadata_t ig_intr_md,
                in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* ---- L2 forwarding and proxy ARP (injector.(*Switch).forward) ---- */
    action forward(PortId_t port) { ig_tm_md.ucast_egress_port = port; meta.fwd = 1; }
    action drop_frame() { ig_dprsr_md.drop_ctl = 1; }
    table l2_forward {
        key = { hdr.ethernet.dst_addr : exact; }
        actions = { forward; drop_frame; }
        default_action = drop_frame();
        size = 1024;
    }

    /* ---- logical switches (injector.(*Switch).switchOf, docs/tofino.md) ----
     * The ports are partitioned into up to NUM_SWITCHES logical switches
     * (Hawkeye's emulation of a fabric on one Tofino); a link between two
     * of them is a cable looped between two ports. port_switch names the
     * logical switch of the ingress port (no entry: switch 0, the one
     * switch of a test without a fabric). It indexes the mirror sequence
     * and the WRR slot and keys fabric_forward. */
    action set_switch(bit<5> id) { meta.switch_id = id; }
    table port_switch {
        key = { ig_intr_md.ingress_port : exact; }
        actions = { set_switch; }
        default_action = set_switch(0);
        size = NUM_PORTS;
    }
    /* A fabric's routes: at logical switch switch_id, a frame from host
     * MAC src to host MAC dst leaves by port (the next hop's link port or
     * the destination host's port). A miss falls through to l2_forward. */
    table fabric_forward {
        key = {
            meta.switch_id        : exact;
            hdr.ethernet.src_addr : exact;
            hdr.ethernet.dst_addr : exact;
        }
        actions = { forward; NoAction; }
        default_action = NoAction();
        size = FABRIC_ROUTES;
    }

    action arp_reply(mac_addr_t mac) {
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;
        hdr.arp.opcode = 2;
        hdr.arp.target_hw_addr = hdr.arp.sender_hw_addr;
        ipv4_addr_t ip = hdr.arp.target_proto_addr;
        hdr.arp.target_proto_addr = hdr.arp.sender_proto_addr;
        hdr.arp.sender_hw_addr = mac;
        hdr.arp.sender_proto_addr = ip;
        ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port;
        ig_tm_md.bypass_egress = 1;
    }
    table arp_proxy {
        key = { hdr.arp.target_proto_addr : exact; }
        actions = { arp_reply; NoAction; }
        default_action = NoAction();
        size = 1024;
    }

    /* ---- ITER tracking (injector.(*Switch).updateIter) ----
     * expected_psn[c] is the PSN the connection's next in-order data packet
     * carries; iter_reg[c] the current round. All PSN arithmetic is modulo
     * 2^24 (the public tool's 32-bit add bumps ITER at the wrap).
     *   message scope:    FIRST/ONLY/READ_RESPONSE_FIRST|ONLY with psn == expected → ITER = 1;
     *                     otherwise psn != expected → ITER + 1.
     *   connection scope: psn ≤ last (i.e. psn − expected < 0 mod 2^24) → ITER + 1.
     *   expected = psn + 1 (mod 2^24), before the event table runs.
     * responses = 1: the entry is (responder port, requester QPN), the
     * responder's ACK/NAKs; they take part (only CNPs stay out) and ITER
     * follows the connection scope rule whatever iter_scope says. */
    action set_conn(bit<16> conn_idx, bit<1> iter_scope, bit<1> responses) {
        meta.tracked = 1;
        meta.conn_idx = conn_idx;
        meta.iter_scope = iter_scope;
        meta.responses = responses;
    }
    table conn_lookup {
        key = { ig_intr_md.ingress_port : exact; hdr.bth.dest_qp : exact; }
        actions = { set_conn; NoAction; }
        default_action = NoAction();
        size = NUM_CONNS;
    }

    Register<bit<32>, bit<16>>(NUM_CONNS) expected_psn;
    Register<bit<16>, bit<16>>(NUM_CONNS) iter_reg;

    bit<1> in_order;
    RegisterAction<bit<32>, bit<16>, bit<1>>(expected_psn) advance_expected = {
        void apply(inout bit<32> e, out bit<1> same) {
            same = (bit<1>)(e == (bit<32>)hdr.bth.psn);
            e = ((bit<32>)hdr.bth.psn + 1) & 0x00ffffff;
        }
    };
    bit<1> behind;
    RegisterAction<bit<32>, bit<16>, bit<1>>(expected_psn) advance_expected_conn = {
        void apply(inout bit<32> e, out bit<1> back) {
            /* sign bit of (psn − expected) << 8: psn comes before expected */
            bit<32> d = (((bit<32>)hdr.bth.psn - e) << 8);
            back = (bit<1>)(d[31:31]);
            e = ((bit<32>)hdr.bth.psn + 1) & 0x00ffffff;
        }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(iter_reg) iter_reset = {
        void apply(inout bit<16> v, out bit<16> r) { v = 1; r = 1; }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(iter_reg) iter_bump = {
        void apply(inout bit<16> v, out bit<16> r) { v = v + 1; r = v; }
    };
    RegisterAction<bit<16>, bit<16>, bit<16>>(iter_reg) iter_read = {
        void apply(inout bit<16> v, out bit<16> r) { r = v; }
    };

    /* ---- event injection (injector.(*Switch).inject) ---- */
    action drop_event() { meta.event = EVENT_DROP; ig_dprsr_md.drop_ctl = 1; }
    action mark_ecn()   { meta.event = EVENT_ECN; hdr.ipv4.ecn = 3; }
    action corrupt()    { meta.event = EVENT_CORRUPT; hdr.ipv4.identification = hdr.ipv4.identification ^ 0xffff; }
    /* Delay, reorder and duplicate only note what to do here; the apply
     * block turns the note into a hold or a chain of copies once the packet
     * is known to be forwarded. The first pass mirrors nothing for a held
     * packet, and the original of a duplicate untagged. */
    action delay_event(bit<32> delay_ns) {
        meta.hold_kind = HOLD_DELAY;
        meta.hold_ns = delay_ns;
    }
    action reorder_event(bit<8> overtakers, bit<32> max_hold_ns) {
        meta.hold_kind = HOLD_REORDER;
        meta.overtakers = overtakers;
        meta.hold_ns = max_hold_ns;
    }
    action duplicate_event(bit<8> copies) { meta.dup_copies = copies; }
    table event_table {
        key = {
            ig_intr_md.ingress_port : exact;
            hdr.bth.dest_qp         : exact;
            hdr.bth.psn             : exact;
            meta.iter               : exact;
        }
        actions = { drop_event; mark_ecn; corrupt; delay_event; reorder_event; duplicate_event; NoAction; }
        default_action = NoAction();
        size = EVENT_SLOTS;
    }

    /* ---- holding and copying (injector.(*Switch): delay, reorder, duplicate) ----
     * conn_forwarded[c] counts the packets of connection c (conn_lookup
     * entry c) that left towards their egress port: first passes that are
     * forwarded, held packets when released, and each duplicate copy. A
     * reorder hold reads it (target = count + overtakers) and each of its
     * passes compares: count − target ≥ 0 (mod 2^32) releases it. One access
     * per pass (meta.conn_op). Per pipe, like every register: a connection's
     * packets and its held packets stay in the pipe of its ingress port. */
    Register<bit<32>, bit<16>>(NUM_CONNS) conn_forwarded;
    RegisterAction<bit<32>, bit<16>, bit<32>>(conn_forwarded) fwd_bump = {
        void apply(inout bit<32> v) { v = v + 1; }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(conn_forwarded) fwd_read = {
        void apply(inout bit<32> v, out bit<32> r) { r = v; }
    };
    RegisterAction<bit<32>, bit<16>, bit<1>>(conn_forwarded) fwd_release = {
        void apply(inout bit<32> v, out bit<1> go) {
            go = 0;
            if ((int<32>)(v - hdr.hold.target) >= 0) {
                v = v + 1;
                go = 1;
            }
        }
    };

    /* ---- mirroring (injector.(*Switch).mirror) ---- */
    Register<bit<8>, bit<5>>(NUM_SWITCHES) wrr_index;
    RegisterAction<bit<8>, bit<5>, bit<8>>(wrr_index) wrr_next = {
        void apply(inout bit<8> v, out bit<8> r) {
            r = v;
            if (v + 1 >= meta.wrr_size) { v = 0; } else { v = v + 1; }
        }
    };
    action set_wrr_size(bit<8> size) { meta.wrr_size = size; }
    table wrr_config {
        actions = { set_wrr_size; }
        default_action = set_wrr_size(1);
        size = 1;
    }
    action set_mirror(MirrorId_t session) { meta.mirror_session = session; }
    table mirror_select {
        key = { meta.wrr_slot : exact; }
        actions = { set_mirror; NoAction; }
        default_action = NoAction();
        size = WRR_SLOTS;
    }
    /* One sequence per logical switch (index: meta.switch_id), counting
     * from 1, 40 bits (seq_hi ++ seq_lo): the copy's 48-bit field carries
     * switch_id << 41 | seq (roce.MirrorMeta.Switch), so byte 0 is
     * switch_id << 1, never a multicast address, and switch 0 writes the
     * field of a one-switch pipeline. The control plane reads the last
     * sequence of each switch from these registers after a run. */
    Register<bit<32>, bit<5>>(NUM_SWITCHES) mirror_seq_lo;
    Register<bit<8>, bit<5>>(NUM_SWITCHES) mirror_seq_hi;
    RegisterAction<bit<32>, bit<5>, bit<32>>(mirror_seq_lo) seq_next = {
        void apply(inout bit<32> v, out bit<32> r) { v = v + 1; r = v; }
    };
    RegisterAction<bit<8>, bit<5>, bit<8>>(mirror_seq_hi) seq_hi_bump = {
        void apply(inout bit<8> v, out bit<8> r) { v = v + 1; r = v; }
    };
    RegisterAction<bit<8>, bit<5>, bit<8>>(mirror_seq_hi) seq_hi_read = {
        void apply(inout bit<8> v, out bit<8> r) { r = v; }
    };

    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) rx_roce;
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) event_drops;
    Counter<bit<64>, bit<8>>(WRR_SLOTS, CounterType_t.PACKETS) mirrored;

    apply {
        if (hdr.arp.isValid() && hdr.arp.opcode == 1) {
            if (arp_proxy.apply().hit) { exit; }
        }
        if (hdr.pause_gen.isValid()) {
            /* ---- a pause of the packet generator (injector.(*Switch).pfcInject) ----
             * Leaves by the host's port as the template's PFC frame, and is
             * mirrored as sent with EVENT_PAUSE, from egress, by the mirror
             * sequence of the port's logical switch, like any frame the
             * switch sends (injector.(*Switch).mirrorMAC). */
            ig_tm_md.ucast_egress_port = hdr.pause_gen.port;
            meta.switch_id = hdr.pause_gen.switch_id;
            meta.pause_out = 1;
            meta.fwd = 1;
            meta.event = EVENT_PAUSE;
            meta.mirror_it = 1;
            hdr.pktgen.setInvalid();
            hdr.pause_gen.setInvalid();
        } else if (!hdr.hold.isValid()) {
            port_switch.apply();
        }
        PortId_t recirc_port = (ig_intr_md.ingress_port & DEVPORT_PIPE_MASK) | LUMINA_RECIRC_PORT;
        if (hdr.hold.isValid()) {
            meta.switch_id = hdr.hold.switch_id;
            /* ---- a held packet or a duplicate's copy, back from recirculation ----
             * Not counted in rx_roce, no ITER, no event table: its first
             * pass did that. */
            meta.hold_in = 1;
            meta.tracked = 1;
            meta.conn_idx = hdr.hold.conn_idx;
            bit<48> late = ig_prsr_md.global_tstamp - hdr.hold.deadline;
            if (hdr.hold.kind == HOLD_DUPLICATE) {
                meta.event = EVENT_DUPLICATE;
                meta.release = 1;
                meta.conn_op = CONN_BUMP;
            } else if (hdr.hold.kind == HOLD_DELAY) {
                meta.event = EVENT_DELAY;
                if (late[47:47] == 0) {
                    meta.release = 1;
                    meta.conn_op = CONN_BUMP;
                }
            } else {
                meta.event = EVENT_REORDER;
                if (late[47:47] == 0) {
                    /* max_hold_ns passed before enough packets overtook it */
                    meta.release = 1;
                    meta.conn_op = CONN_BUMP;
                } else {
                    meta.conn_op = CONN_TRY;
                }
            }
        } else if (meta.pause_out == 0) {
            if (!fabric_forward.apply().hit) {
                l2_forward.apply();
            }
            if (hdr.bth.isValid()) {
                rx_roce.count(ig_intr_md.ingress_port);
                conn_lookup.apply();
                /* data packets only: not ACKNOWLEDGE/ATOMIC_ACKNOWLEDGE (0x11, 0x12) nor CNP (0x81);
                 * a responses entry takes ACK/NAKs too (never CNPs) */
                if (meta.tracked == 1 && hdr.bth.opcode != 0x81 &&
                    (meta.responses == 1 || (hdr.bth.opcode != 0x11 && hdr.bth.opcode != 0x12))) {
                    if (hdr.bth.opcode == 0x00 || hdr.bth.opcode == 0x04 || hdr.bth.opcode == 0x05 ||
                        hdr.bth.opcode == 0x06 || hdr.bth.opcode == 0x0a || hdr.bth.opcode == 0x0b ||
                        hdr.bth.opcode == 0x0c || hdr.bth.opcode == 0x0d || hdr.bth.opcode == 0x10) {
                        meta.first_of_msg = 1;
                    }
                    if (meta.iter_scope == 0 && meta.responses == 0) {
                        in_order = advance_expected.execute(meta.conn_idx);
                        if (meta.first_of_msg == 1 && in_order == 1) {
                            meta.iter = iter_reset.execute(meta.conn_idx);
                        } else if (in_order == 0) {
                            meta.iter = iter_bump.execute(meta.conn_idx);
                        } else {
                            meta.iter = iter_read.execute(meta.conn_idx);
                        }
                    } else {
                        behind = advance_expected_conn.execute(meta.conn_idx);
                        if (behind == 1) {
                            meta.iter = iter_bump.execute(meta.conn_idx);
                        } else {
                            meta.iter = iter_read.execute(meta.conn_idx);
                        }
                    }
                    if (event_table.apply().hit && meta.event == EVENT_DROP) {
                        event_drops.count(ig_intr_md.ingress_port);
                    }
                }
                if (meta.hold_kind != 0 && meta.fwd == 1) {
                    /* Put on hold: to the recirculation port, mirrored when it leaves. */
                    hdr.hold.setValid();
                    hdr.hold.kind = meta.hold_kind;
                    hdr.hold.copies = 0;
                    hdr.hold.pad = 0;
                    hdr.hold.switch_id = meta.switch_id;
                    hdr.hold.port = ig_tm_md.ucast_egress_port;
                    hdr.hold.conn_idx = meta.conn_idx;
                    hdr.hold.target = 0;
                    hdr.hold.deadline = ig_prsr_md.global_tstamp + (bit<48>)meta.hold_ns;
                    hdr.hold.arrived = ig_prsr_md.global_tstamp;
                    ig_tm_md.ucast_egress_port = recirc_port;
                    if (meta.hold_kind == HOLD_REORDER) {
                        meta.conn_op = CONN_READ;
                    }
                } else {
                    /* Forwarded now (or dropped, and mirrored as today). An
                     * event on a packet l2_forward drops is void. */
                    meta.mirror_it = 1;
                    if (meta.tracked == 1 && meta.fwd == 1 && meta.event != EVENT_DROP) {
                        meta.conn_op = CONN_BUMP;
                        if (meta.dup_copies != 0) {
                            /* The original leaves untagged; the PRE puts one
                             * more copy on the recirculation port. */
                            hdr.hold.setValid();
                            hdr.hold.kind = HOLD_DUPLICATE;
                            hdr.hold.copies = meta.dup_copies - 1;
                            hdr.hold.pad = 0;
                            hdr.hold.switch_id = meta.switch_id;
                            hdr.hold.port = ig_tm_md.ucast_egress_port;
                            hdr.hold.conn_idx = meta.conn_idx;
                            hdr.hold.target = 0;
                            hdr.hold.deadline = 0;
                            ig_tm_md.mcast_grp_a = DUP_MCAST_GRP + (bit<16>)ig_intr_md.ingress_port[8:7];
                        }
                    }
                }
            }
        }

        /* The pass's one access to conn_forwarded. */
        if (meta.tracked == 1) {
            if (meta.conn_op == CONN_BUMP) {
                fwd_bump.execute(meta.conn_idx);
            } else if (meta.conn_op == CONN_READ) {
                meta.fwd_seen = fwd_read.execute(meta.conn_idx);
            } else if (meta.conn_op == CONN_TRY) {
                meta.release = fwd_release.execute(meta.conn_idx);
            }
        }
        if (meta.conn_op == CONN_READ) {
            hdr.hold.target = meta.fwd_seen + (bit<32>)meta.overtakers;
        }

        if (meta.hold_in == 1) {
            if (meta.release == 1) {
                /* Leaves now, towards the port its first pass chose; mirrored
                 * now, tagged with its event. */
                meta.mirror_it = 1;
                ig_tm_md.ucast_egress_port = hdr.hold.port;
                if (hdr.hold.kind == HOLD_DUPLICATE && hdr.hold.copies != 0) {
                    hdr.hold.copies = hdr.hold.copies - 1;
                    ig_tm_md.mcast_grp_a = DUP_MCAST_GRP + (bit<16>)ig_intr_md.ingress_port[8:7];
                } else {
                    hdr.hold.setInvalid();
                }
            } else {
                /* Not yet: one more pass. */
                ig_tm_md.ucast_egress_port = recirc_port;
            }
        }

        if (meta.mirror_it == 1) {
            wrr_config.apply();
            meta.wrr_slot = wrr_next.execute(meta.switch_id);
            if (mirror_select.apply().hit) {
                /* The sequence number counts mirrored copies: a gap in the
                 * trace is a copy lost between switch and dumper. */
                meta.seq_lo = seq_next.execute(meta.switch_id);
                if (meta.seq_lo == 0) {
                    meta.seq_hi = seq_hi_bump.execute(meta.switch_id);
                } else {
                    meta.seq_hi = seq_hi_read.execute(meta.switch_id);
                }
                mirrored.count(meta.wrr_slot);
                meta.mirror.setValid();
                /* The mirror copy is the packet as this pass received it:
                 * after a recirculation it starts with the hold_h. */
                if (meta.hold_in == 1) {
                    meta.mirror.pkt_type = PKT_MIRROR_HELD;
                    meta.mirror.held = ig_prsr_md.global_tstamp - hdr.hold.arrived;
                } else if (meta.pause_out == 1) {
                    meta.mirror.pkt_type = PKT_MIRROR_MAC;
                    meta.mirror.held = 0;
                } else {
                    meta.mirror.pkt_type = PKT_MIRROR;
                    meta.mirror.held = 0;
                }
                meta.mirror.event = meta.event;
                meta.mirror.timestamp = ig_prsr_md.global_tstamp;
                // The 48-bit field: the switch id in bits 41..45, a 40-bit
                // sequence number below (roce.MirrorSeqField).
                meta.mirror.seq = 2w0 ++ meta.switch_id ++ 1w0 ++ meta.seq_hi ++ meta.seq_lo;
                meta.mirror.qdepth = 0;
                if ((meta.fwd == 1 || meta.hold_in == 1) && meta.event != EVENT_DROP) {
                    /* Forwarded (a released hold leaves towards the port
                     * its first pass chose): mirrored from egress, where its queue's
                     * depth is known; the hold_h is gone by then. */
                    if (meta.pause_out == 0) {
                        meta.mirror.pkt_type = PKT_MIRROR;
                    }
                    meta.mirror.eg_mirror = 1;
                    meta.mirror.session = meta.mirror_session;
                } else {
                    /* Dropped: mirrored here, joining no queue (depth 0). */
                    ig_dprsr_md.mirror_type = 1;
                }
            }
        }
        hdr.bridge = meta.mirror; /* eg_mirror and the copy's metadata */
        hdr.bridge.setValid();
        if (hdr.hold.isValid()) {
            hdr.bridge.pkt_type = PKT_HOLD;
        } else {
            hdr.bridge.pkt_type = PKT_NORMAL;
        }
    }
}

control IngressDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t meta,
                        in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Mirror() mirror;
    Checksum() ipv4_csum;
    apply {
        if (ig_dprsr_md.mirror_type == 1) {
            mirror.emit<mirror_bridge_h>(meta.mirror_session, meta.mirror);
        }
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr);
    }
}

parser EgressParser(packet_in pkt, out headers_t hdr, out eg_meta_t meta,
                    out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        transition select(hdr.bridge.pkt_type) {
            PKT_HOLD:        parse_hold;
            PKT_MIRROR_HELD: parse_hold;
            default: parse_ethernet;
        }
    }
    state parse_hold { pkt.extract(hdr.hold); transition parse_ethernet; }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) { ETHERTYPE_IPV4: parse_ipv4; default: accept; }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) { UDP_PORT_ROCE: parse_bth; default: accept; }
    }
    state parse_bth { pkt.extract(hdr.bth); transition accept; }
}

control Egress(inout headers_t hdr, inout eg_meta_t meta,
               in egress_intrinsic_metadata_t eg_intr_md,
               in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
               inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
               inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {

    Random<bit<16>>() rnd;
    Random<bit<32>>() red_rnd;

    /* ---- RED/ECN on the egress queue depth (injector.(*Switch).admit) ----
     * One entry per DSCP of a marked priority (switch.ecn): an ECT(0) or
     * ECT(1) RoCE packet enqueued at d cells is marked CE never for
     * d <= kmin_cells, always for d > kmax_cells, and in between when a
     * random number masked by rand_mask is below d − kmin_cells: probability
     * (d − kmin)/(rand_mask + 1). The control plane sets rand_mask + 1 to
     * the power of two nearest (kmax − kmin)/pmax, so that the probability
     * at kmax is pmax within that rounding (no division at line rate;
     * controlplane.ECNRed). The software target marks from the same
     * entries on its queue's depth in cells (injector, ecn.go). */
    bit<19> red_kmin;
    bit<19> red_kmax;
    bit<32> red_mask;
    action set_red(bit<19> kmin_cells, bit<19> kmax_cells, bit<32> rand_mask) {
        red_kmin = kmin_cells;
        red_kmax = kmax_cells;
        red_mask = rand_mask;
    }
    table ecn_red {
        key = { hdr.ipv4.dscp : exact; }
        actions = { set_red; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    /* Per egress port (each switch of a fabric has its own switch.ecn):
     * an entry here takes precedence over ecn_red's for the DSCP. */
    table ecn_red_port {
        key = { eg_intr_md.egress_port : exact; hdr.ipv4.dscp : exact; }
        actions = { set_red; NoAction; }
        default_action = NoAction();
        size = 8192;
    }

    /* ---- mirror copy rewrite (injector.(*Switch).rewriteMirror, roce.ApplyMirror) ---- */
    action rewrite_mirror(bit<16> dst_port) {
        hdr.ipv4.ttl = hdr.bridge.qdepth[10:6] ++ hdr.bridge.event[2:0];
        hdr.bth.resv6 = hdr.bridge.qdepth[5:0];
        hdr.ethernet.src_addr = hdr.bridge.seq;
        hdr.ethernet.dst_addr = hdr.bridge.timestamp;
        hdr.udp.checksum = hdr.udp.src_port;
        hdr.udp.src_port = rnd.get();
        hdr.udp.dst_port = dst_port;
    }
    table mirror_rewrite {
        actions = { rewrite_mirror; }
        default_action = rewrite_mirror(9741);
        size = 1;
    }

    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) tx_roce;

    apply {
        /* The hold_h goes on only with a packet that recirculates: a held
         * packet, or the PRE's replica of a duplicate on the recirculation
         * port. The unicast replica of a duplicate and mirror copies lose it. */
        bool recirc = hdr.bridge.pkt_type == PKT_HOLD &&
                      eg_intr_md.egress_port[6:0] == LUMINA_RECIRC_PORT;
        bool copy = hdr.bridge.pkt_type == PKT_MIRROR || hdr.bridge.pkt_type == PKT_MIRROR_HELD ||
                    hdr.bridge.pkt_type == PKT_MIRROR_MAC;
        if (hdr.bridge.pkt_type == PKT_MIRROR_MAC) {
            /* A pause's mirror copy: the wrapper in front of the frame
             * (roce.AppendMACMirror); the port it left by rode in held. */
            hdr.mac_mirror.setValid();
            hdr.mac_mirror.timestamp = hdr.bridge.timestamp;
            hdr.mac_mirror.seq = hdr.bridge.seq;
            hdr.mac_mirror.ether_type = ETHERTYPE_LUMINA_MIRROR;
            hdr.mac_mirror.event = hdr.bridge.event;
            hdr.mac_mirror.flags = MAC_MIRROR_SENT;
            hdr.mac_mirror.port = hdr.bridge.held[15:0];
        } else if (hdr.bridge.event == EVENT_PAUSE && hdr.bridge.eg_mirror == 1) {
            /* A pause of the packet generator in the host port's queue:
             * its copy, from here, as sent; held carries the port. */
            meta.mirror = hdr.bridge;
            meta.mirror.pkt_type = PKT_MIRROR_MAC;
            meta.mirror.eg_mirror = 0;
            meta.mirror.held = (bit<48>)eg_intr_md.egress_port;
            meta.mirror_session = hdr.bridge.session;
            eg_dprsr_md.mirror_type = 1;
        }
        if (hdr.bth.isValid() && !recirc && !copy) {
            /* A forwarded RoCE packet in its queue: RED, then its mirror copy
             * with the depth it was enqueued at. */
            bit<19> q = eg_intr_md.enq_qdepth;
            bool red_hit = false;
            if (hdr.ipv4.ecn == 1 || hdr.ipv4.ecn == 2) {
                if (ecn_red_port.apply().hit) {
                    red_hit = true;
                } else if (ecn_red.apply().hit) {
                    red_hit = true;
                }
            }
            if (red_hit) {
                if (q > red_kmax) {
                    hdr.ipv4.ecn = 3;
                } else if (q > red_kmin) {
                    bit<32> r = red_rnd.get() & red_mask;
                    if (r < (bit<32>)(q - red_kmin)) {
                        hdr.ipv4.ecn = 3;
                    }
                }
            }
            if (hdr.bridge.eg_mirror == 1) {
                /* Depth in bytes (cells × LUMINA_CELL_BYTES by shifts),
                 * then its DepthCode: 3-bit exponent e, 8-bit mantissa
                 * bytes >> 3e, rounded down; 0x7FF from 255 << 21 on. */
                bit<32> qc = (bit<32>)q;
#if __TARGET_TOFINO__ == 2
                bit<32> qb = (qc << 7) + (qc << 5) + (qc << 4);
#else
                bit<32> qb = (qc << 6) + (qc << 4);
#endif
                bit<11> code;
                if (qb[31:8] == 0) {
                    code = 3w0 ++ qb[7:0];
                } else if (qb[31:11] == 0) {
                    code = 3w1 ++ qb[10:3];
                } else if (qb[31:14] == 0) {
                    code = 3w2 ++ qb[13:6];
                } else if (qb[31:17] == 0) {
                    code = 3w3 ++ qb[16:9];
                } else if (qb[31:20] == 0) {
                    code = 3w4 ++ qb[19:12];
                } else if (qb[31:23] == 0) {
                    code = 3w5 ++ qb[22:15];
                } else if (qb[31:26] == 0) {
                    code = 3w6 ++ qb[25:18];
                } else if (qb[31:29] == 0) {
                    code = 3w7 ++ qb[28:21];
                } else {
                    code = 0x7FF;
                }
                meta.mirror = hdr.bridge;
                meta.mirror.pkt_type = PKT_MIRROR;
                meta.mirror.eg_mirror = 0;
                meta.mirror.qdepth = code;
                meta.mirror_session = hdr.bridge.session;
                eg_dprsr_md.mirror_type = 1;
            }
        }
        if (hdr.bth.isValid()) {
            if (hdr.bridge.pkt_type == PKT_MIRROR || hdr.bridge.pkt_type == PKT_MIRROR_HELD) {
                mirror_rewrite.apply();
                /* The hold of a delayed or reordered copy in its UDP
                 * source port (roce.EncodeHold; the dumper moves it to the
                 * UDP checksum): 3-bit exponent e, 13-bit mantissa
                 * hold >> 3e, rounded down; 0xFFFF from 8191 << 21 ns on. */
                bit<48> h = hdr.bridge.held;
                if (hdr.bridge.event != EVENT_DELAY && hdr.bridge.event != EVENT_REORDER) {
                    /* not held: the random source port stays */
                } else if (h[47:13] == 0) {
                    hdr.udp.src_port = 3w0 ++ h[12:0];
                } else if (h[47:16] == 0) {
                    hdr.udp.src_port = 3w1 ++ h[15:3];
                } else if (h[47:19] == 0) {
                    hdr.udp.src_port = 3w2 ++ h[18:6];
                } else if (h[47:22] == 0) {
                    hdr.udp.src_port = 3w3 ++ h[21:9];
                } else if (h[47:25] == 0) {
                    hdr.udp.src_port = 3w4 ++ h[24:12];
                } else if (h[47:28] == 0) {
                    hdr.udp.src_port = 3w5 ++ h[27:15];
                } else if (h[47:31] == 0) {
                    hdr.udp.src_port = 3w6 ++ h[30:18];
                } else if (h[47:34] == 0) {
                    hdr.udp.src_port = 3w7 ++ h[33:21];
                } else {
                    hdr.udp.src_port = 0xFFFF;
                }
            } else if (!recirc) {
                tx_roce.count(eg_intr_md.egress_port);
            }
        }
        if (!recirc) {
            hdr.hold.setInvalid();
        }
        hdr.bridge.setInvalid();
    }
}

control EgressDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t meta,
                       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Mirror() mirror;
    Checksum() ipv4_csum;
    apply {
        /* The E2E mirror copy is the packet as deparsed here (RED's mark
         * included), behind its mirror_bridge_h. */
        if (eg_dprsr_md.mirror_type == 1) {
            mirror.emit<mirror_bridge_h>(meta.mirror_session, meta.mirror);
        }
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        pkt.emit(hdr);
    }
}

Pipeline(IngressParser(), Ingress(), IngressDeparser(),
         EgressParser(), Egress(), EgressDeparser()) pipe;

Switch(pipe) main;
