/* lumina.p4 — the Lumina event injector for Intel Tofino (TNA), Tofino 1 and 2.
 *
 * Forwards traffic between the hosts under test by destination MAC (with
 * proxy ARP), tracks a transmission round (ITER) per RoCEv2 connection,
 * drops / ECN-marks / corrupts exactly the data packets addressed by
 * (ingress port, destination QPN, PSN, ITER), and mirrors EVERY RoCEv2
 * packet, before the drop takes effect, to a pool of up to 16 dumper ports
 * chosen by weighted round robin. Egress rewrites each mirror copy: event
 * type in the IPv4 TTL, 48-bit mirror sequence number in the source MAC,
 * 48-bit ingress timestamp (ns) in the destination MAC, UDP destination port
 * = the configured mirror port, UDP source port random, original source port
 * in the UDP checksum field.
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

const bit<8> PKT_NORMAL = 1;
const bit<8> PKT_MIRROR = 2;

const int NUM_CONNS    = 16384;
const int EVENT_SLOTS  = 65536;
const int WRR_SLOTS    = 256;
const int NUM_PORTS    = 512;

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

/* Bridged to egress with every copy: mirror copies carry their metadata. */
header mirror_bridge_h {
    bit<8>  pkt_type;
    bit<8>  event;
    bit<48> timestamp;
    bit<48> seq;
}

struct headers_t {
    mirror_bridge_h bridge;
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
    bit<16>     conn_idx;
    bit<16>     iter;
    bit<1>      first_of_msg;
    bit<8>      event;
    bit<8>      wrr_slot;
    bit<8>      wrr_size;
    bit<32>     seq_lo;
    bit<16>     seq_hi;
    MirrorId_t  mirror_session;
    mirror_bridge_h mirror;
}

struct eg_meta_t { mirror_bridge_h mirror; }

parser IngressParser(packet_in pkt, out headers_t hdr, out ig_meta_t meta,
                     out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0, 0}};
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
    action forward(PortId_t port) { ig_tm_md.ucast_egress_port = port; }
    action drop_frame() { ig_dprsr_md.drop_ctl = 1; }
    table l2_forward {
        key = { hdr.ethernet.dst_addr : exact; }
        actions = { forward; drop_frame; }
        default_action = drop_frame();
        size = 1024;
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
     *   expected = psn + 1 (mod 2^24), before the event table runs. */
    action set_conn(bit<16> conn_idx, bit<1> iter_scope) {
        meta.tracked = 1;
        meta.conn_idx = conn_idx;
        meta.iter_scope = iter_scope;
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
    table event_table {
        key = {
            ig_intr_md.ingress_port : exact;
            hdr.bth.dest_qp         : exact;
            hdr.bth.psn             : exact;
            meta.iter               : exact;
        }
        actions = { drop_event; mark_ecn; corrupt; NoAction; }
        default_action = NoAction();
        size = EVENT_SLOTS;
    }

    /* ---- mirroring (injector.(*Switch).mirror) ---- */
    Register<bit<8>, bit<1>>(1) wrr_index;
    RegisterAction<bit<8>, bit<1>, bit<8>>(wrr_index) wrr_next = {
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
    Register<bit<32>, bit<1>>(1) mirror_seq_lo;
    Register<bit<16>, bit<1>>(1) mirror_seq_hi;
    RegisterAction<bit<32>, bit<1>, bit<32>>(mirror_seq_lo) seq_next = {
        void apply(inout bit<32> v, out bit<32> r) { v = v + 1; r = v; }
    };
    RegisterAction<bit<16>, bit<1>, bit<16>>(mirror_seq_hi) seq_hi_bump = {
        void apply(inout bit<16> v, out bit<16> r) { v = v + 1; r = v; }
    };
    RegisterAction<bit<16>, bit<1>, bit<16>>(mirror_seq_hi) seq_hi_read = {
        void apply(inout bit<16> v, out bit<16> r) { r = v; }
    };

    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) rx_roce;
    Counter<bit<64>, PortId_t>(NUM_PORTS, CounterType_t.PACKETS) event_drops;
    Counter<bit<64>, bit<8>>(WRR_SLOTS, CounterType_t.PACKETS) mirrored;

    apply {
        if (hdr.arp.isValid() && hdr.arp.opcode == 1) {
            if (arp_proxy.apply().hit) { exit; }
        }
        l2_forward.apply();
        if (hdr.bth.isValid()) {
            rx_roce.count(ig_intr_md.ingress_port);
            conn_lookup.apply();
            /* data packets only: not ACKNOWLEDGE/ATOMIC_ACKNOWLEDGE (0x11, 0x12) nor CNP (0x81) */
            if (meta.tracked == 1 && hdr.bth.opcode != 0x11 && hdr.bth.opcode != 0x12 && hdr.bth.opcode != 0x81) {
                if (hdr.bth.opcode == 0x00 || hdr.bth.opcode == 0x04 || hdr.bth.opcode == 0x05 ||
                    hdr.bth.opcode == 0x06 || hdr.bth.opcode == 0x0a || hdr.bth.opcode == 0x0b ||
                    hdr.bth.opcode == 0x0c || hdr.bth.opcode == 0x0d || hdr.bth.opcode == 0x10) {
                    meta.first_of_msg = 1;
                }
                if (meta.iter_scope == 0) {
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
            wrr_config.apply();
            meta.wrr_slot = wrr_next.execute(0);
            if (mirror_select.apply().hit) {
                /* The sequence number counts mirrored copies: a gap in the
                 * trace is a copy lost between switch and dumper. */
                meta.seq_lo = seq_next.execute(0);
                if (meta.seq_lo == 0) {
                    meta.seq_hi = seq_hi_bump.execute(0);
                } else {
                    meta.seq_hi = seq_hi_read.execute(0);
                }
                mirrored.count(meta.wrr_slot);
                meta.mirror.setValid();
                meta.mirror.pkt_type = PKT_MIRROR;
                meta.mirror.event = meta.event;
                meta.mirror.timestamp = ig_prsr_md.global_tstamp;
                meta.mirror.seq = meta.seq_hi ++ meta.seq_lo;
                ig_dprsr_md.mirror_type = 1;
            }
        }
        hdr.bridge.setValid();
        hdr.bridge.pkt_type = PKT_NORMAL;
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
        transition parse_ethernet;
    }
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

    /* ---- mirror copy rewrite (injector.(*Switch).rewriteMirror, roce.ApplyMirror) ---- */
    action rewrite_mirror(bit<16> dst_port) {
        hdr.ipv4.ttl = hdr.bridge.event;
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
        if (hdr.bth.isValid()) {
            if (hdr.bridge.pkt_type == PKT_MIRROR) {
                mirror_rewrite.apply();
            } else {
                tx_roce.count(eg_intr_md.egress_port);
            }
        }
        hdr.bridge.setInvalid();
    }
}

control EgressDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t meta,
                       in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
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
