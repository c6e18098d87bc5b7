-- lumina.lua: Wireshark dissector for the traces lumina's dumpers write
-- (trace.pcap of a run). See docs/wireshark.md.
--
-- It decodes three things Wireshark's own dissectors get wrong on these
-- traces:
--
--   * The mirror metadata of RoCE mirror copies (docs/decode.md, roce/doc.go):
--     destination MAC = 48-bit switch timestamp (ns), source MAC = the
--     logical switch that made the copy (bits 41..45, so its first byte is
--     switch << 1; 0 in a one-switch run) above its 40-bit mirror sequence
--     number (bits 0..39), IP TTL / IPv6 hop limit bits 0..2 = the
--     injected event. The depth of the egress queue the packet joined
--     (roce.DepthCode, 11 bits) is in the TTL bits 3..7 (its top 5 bits) and
--     the BTH's resv6, byte 4 bits 0..5 (its low 6 bits): e = code >> 8,
--     m = code & 0xff, depth = m << (3*e) bytes, the true depth within one
--     unit (1 << (3*e) bytes) above; depth 0 (not shown): an empty queue,
--     or a switch without a queue model.
--     A copy of a packet the switch held (event delay or reorder) carries how
--     long it held it (docs/events.md, roce.EncodeHold) as a 16-bit code in
--     the UDP checksum (in the UDP source port of a raw copy, one addressed
--     to the mirror port): e = code >> 13, m = code & 0x1fff,
--     hold = m << (3*e) ns, the true hold within one unit (1 << (3*e) ns)
--     above; code 0 means no hold recorded (traces from before holds).
--   * The wrapped mirror copies of PFC/PAUSE frames, EtherType 0x88B5
--     (IEEE 802 local experimental EtherType 1):
--       0..5 timestamp, 6..11 switch and sequence number (as a RoCE
--       copy's source MAC), 12..13 0x88B5, 14 event,
--       15 flags (0x01: the switch sent the frame, else it received it),
--       16..17 switch port, 18.. the original frame (no FCS),
--     which is handed to Wireshark's Ethernet dissector.
--   * Copies cut at the dumper's snap-len (128 bytes by default): Wireshark's
--     InfiniBand dissector reports their payload as "Invalid Packet Length
--     from LRH! [Malformed Packet]"; here they are marked "truncated
--     (snap-len)" with the captured and on-the-wire lengths.
--
-- Written for Wireshark 4.0 (Lua 5.2); plain arithmetic instead of bit32,
-- which later Lua versions drop.

local lumina = Proto("lumina", "Lumina mirror copy")

local events = {
    [0] = "none", [1] = "drop", [2] = "ecn", [3] = "corrupt",
    [4] = "delay", [5] = "reorder", [6] = "duplicate", [7] = "pause",
}
local EVENT_DELAY, EVENT_REORDER = 4, 5

local f = {
    seq = ProtoField.uint64("lumina.seq", "Sequence number", base.DEC),
    switch = ProtoField.uint8("lumina.switch", "Switch", base.DEC),
    ts = ProtoField.uint64("lumina.ts", "Switch timestamp (ns)", base.DEC),
    event = ProtoField.uint8("lumina.event", "Event", base.DEC, events),
    hold = ProtoField.uint64("lumina.hold", "Hold (ns, floor)", base.DEC),
    hold_code = ProtoField.uint16("lumina.hold.code", "Hold code", base.HEX),
    hold_unit = ProtoField.uint32("lumina.hold.unit", "Hold unit (ns)", base.DEC),
    qdepth = ProtoField.uint64("lumina.qdepth", "Egress queue depth (bytes, floor)", base.DEC),
    qdepth_code = ProtoField.uint16("lumina.qdepth.code", "Queue depth code", base.HEX),
    qdepth_unit = ProtoField.uint32("lumina.qdepth.unit", "Queue depth unit (bytes)", base.DEC),
    sent = ProtoField.bool("lumina.sent", "Direction", 8,
        { "sent by the switch", "received by the switch" }, 0x01),
    flags = ProtoField.uint8("lumina.flags", "Flags", base.HEX),
    port = ProtoField.uint16("lumina.port", "Switch port", base.DEC),
    udp_src = ProtoField.uint16("lumina.udp_src", "Original UDP source port", base.DEC),
    caplen = ProtoField.uint32("lumina.caplen", "Captured RoCE bytes", base.DEC),
    len = ProtoField.uint32("lumina.len", "RoCE bytes on the wire", base.DEC),
}
lumina.fields = { f.seq, f.switch, f.ts, f.event, f.hold, f.hold_code, f.hold_unit,
    f.qdepth, f.qdepth_code, f.qdepth_unit,
    f.sent, f.flags, f.port, f.udp_src, f.caplen, f.len }

local ex_truncated = ProtoExpert.new("lumina.truncated", "truncated (snap-len)",
    expert.group.UNDECODED, expert.severity.NOTE)
lumina.experts = { ex_truncated }

-- "auto" (default) reads a RoCE frame as a mirror copy when its TTL (hop
-- limit) and BTH resv6 read as an event and a queue depth (a TTL below 8,
-- or a canonical depth code: exponent 0 or mantissa >= 32, so a host's TTL
-- 64 with resv6 0 is none), the first byte of its source MAC is a switch
-- id shifted left by one (0..62, even) and the second is zero, as a
-- sequence number below 2^32 has it; real hosts have an OUI there. This is decided frame by frame (lumina decode --mirror auto
-- lets the first RoCE frame of a file decide).
local MIRROR_AUTO, MIRROR_ON, MIRROR_OFF = 0, 1, 2
lumina.prefs.mirror = Pref.enum("Mirror metadata",
    MIRROR_AUTO, "Read RoCE frames as mirror copies (MACs, TTL, UDP checksum)", {
        { 1, "auto", MIRROR_AUTO }, { 2, "on", MIRROR_ON }, { 3, "off", MIRROR_OFF },
    }, false)
lumina.prefs.mirror_port = Pref.uint("Mirror UDP port", 9741,
    "UDP destination port of raw (unrestored) mirror copies, straight off the wire")

-- Fields of the layers below; the outermost instance is the frame's own.
local fx = {
    eth_dst = Field.new("eth.dst"),
    eth_src = Field.new("eth.src"),
    ip_ttl = Field.new("ip.ttl"),
    ip6_hlim = Field.new("ipv6.hlim"),
    udp_src = Field.new("udp.srcport"),
    udp_csum = Field.new("udp.checksum"),
}

local function first(field)
    local v = field()
    return v
end

-- The InfiniBand dissector Wireshark registers for RoCEv2 (UDP 4791), taken
-- before this one replaces it.
local udp_table = DissectorTable.get("udp.port")
local rroce = udp_table:get_dissector(4791)
local eth = Dissector.get("eth_withoutfcs")

-- Opcode names (IBTA spec vol. 1, section 9.2.1, Table 38 "OpCode field";
-- RoCEv2 CNP: Annex A17.9.3) for the Info column of truncated frames, whose
-- text the InfiniBand dissector replaces by its length complaint.
local transports = { [0] = "RC", [1] = "UC", [2] = "RD", [3] = "UD", [6] = "XRC" }
local operations = {
    [0x00] = "Send First", [0x01] = "Send Middle", [0x02] = "Send Last",
    [0x03] = "Send Last with Immediate", [0x04] = "Send Only",
    [0x05] = "Send Only with Immediate", [0x06] = "RDMA Write First",
    [0x07] = "RDMA Write Middle", [0x08] = "RDMA Write Last",
    [0x09] = "RDMA Write Last with Immediate", [0x0A] = "RDMA Write Only",
    [0x0B] = "RDMA Write Only with Immediate", [0x0C] = "RDMA Read Request",
    [0x0D] = "RDMA Read Response First", [0x0E] = "RDMA Read Response Middle",
    [0x0F] = "RDMA Read Response Last", [0x10] = "RDMA Read Response Only",
    [0x11] = "Acknowledge", [0x12] = "Atomic Acknowledge",
    [0x13] = "CmpSwap", [0x14] = "FetchAdd", [0x15] = "Resync",
    [0x16] = "Send Last with Invalidate", [0x17] = "Send Only with Invalidate",
    [0x1C] = "Flush", [0x1D] = "Atomic Write",
}

local function opcode_name(op)
    if op == 0x81 then
        return "CNP"
    end
    local t = transports[math.floor(op / 32)]
    local o = operations[op % 32]
    if t and o then
        return t .. " " .. o
    end
    return string.format("Opcode 0x%02x", op)
end

-- depth_code returns the queue-depth code of a copy: the TTL's bits 3..7
-- above the BTH's resv6 (tvb is the RoCE part, from the BTH; resv6 counts
-- as 0 when the capture ends before it).
local function depth_code(ttl, tvb)
    local code = math.floor(ttl / 8) * 64
    if tvb:len() >= 5 then
        code = code + tvb(4, 1):uint() % 64
    end
    return code
end

-- queue_depth decodes a depth code: floor in bytes and unit (the true
-- depth is below floor + unit).
local function queue_depth(code)
    local e = math.floor(code / 256)
    local unit = math.floor(2 ^ (3 * e))
    return (code % 256) * unit, unit
end

-- canonical_depth reports whether code is one roce.EncodeDepth writes.
local function canonical_depth(code)
    return code < 256 or code % 256 >= 32
end

-- hold decodes a hold code: floor in ns and unit (the true hold is below
-- floor + unit).
local function hold(code)
    local e = math.floor(code / 0x2000)
    local m = code % 0x2000
    local unit = math.floor(2 ^ (3 * e))
    return m * unit, unit
end

-- add_meta adds the switch, sequence number and timestamp (the MACs) and
-- the event to tree and returns the Info suffix: "sw=N " first for a copy
-- of a switch other than 0, as lumina decode prints it.
local function add_meta(tree, dst, src, event, event_range)
    local ts, seq = dst.range:uint64(), src.range(1, 5):uint64()
    local sw = math.floor(src.range(0, 1):uint() / 2) % 32
    tree:add(f.switch, src.range(0, 1), sw)
    tree:add(f.seq, src.range, seq)
    tree:add(f.ts, dst.range, ts)
    tree:add(f.event, event_range, event)
    local prefix = ""
    if sw ~= 0 then
        prefix = string.format("sw=%d ", sw)
    end
    return string.format("%sseq=%s ts=%s event=%s", prefix, tostring(seq), tostring(ts),
        events[event] or string.format("event(%d)", event))
end

-- append_info appends s (" [...]") to the Info column without doubling the
-- space the InfiniBand dissector leaves at its end.
local function append_info(pinfo, s)
    if s ~= "" and tostring(pinfo.cols.info):sub(-1) == " " then
        s = s:sub(2)
    end
    pinfo.cols.info:append(s)
end

-- pending is the Info column of the RoCE frame being dissected: info
-- replaces the InfiniBand dissector's text when set, suffix follows.
local pending

local function roce_info(tvb)
    return string.format("%s QP=0x%06x PSN=%d", opcode_name(tvb(0, 1):uint()), tvb(5, 3):uint(), tvb(9, 3):uint())
end

-- dissect_roce adds the mirror metadata (when mirror) and the truncation
-- note to the tree, then calls the InfiniBand dissector. raw is set for a
-- copy addressed to the mirror port, whose UDP checksum field holds the
-- original source port and whose source port holds the hold code.
local function dissect_roce(tvb, pinfo, tree, mirror, raw)
    local dst, src = first(fx.eth_dst), first(fx.eth_src)
    local ttl = first(fx.ip_ttl) or first(fx.ip6_hlim)
    mirror = mirror and dst ~= nil and src ~= nil and ttl ~= nil

    local caplen, len = tvb:len(), tvb:reported_len()
    local truncated = caplen < len
    local suffix = ""
    if mirror or truncated then
        local sub = tree:add(lumina, tvb(0, 0))
        if mirror then
            local event = ttl.value % 8
            local meta = add_meta(sub, dst, src, event, ttl.range)
            local holder = first(raw and fx.udp_src or fx.udp_csum)
            if (event == EVENT_DELAY or event == EVENT_REORDER) and holder then
                local code = holder.value
                if code == 0 then
                    sub:add(holder.range, "Hold: not recorded (a trace from before holds)")
                else
                    local floor, unit = hold(code)
                    local h = sub:add(f.hold, holder.range, UInt64(floor))
                    h:append_text(string.format(" (true hold in [%d, %d] ns)", floor, floor + unit - 1))
                    sub:add(f.hold_code, holder.range, code)
                    sub:add(f.hold_unit, holder.range, unit)
                    -- as lumina decode prints it
                    if unit > 1 then
                        meta = meta .. string.format(" hold=%d..%dns", floor, floor + unit - 1)
                    else
                        meta = meta .. string.format(" hold=%dns", floor)
                    end
                end
            end
            local code = depth_code(ttl.value, tvb)
            local floor, unit = queue_depth(code)
            if floor ~= 0 then
                local q = sub:add(f.qdepth, ttl.range, UInt64(floor))
                q:append_text(string.format(" (true depth in [%d, %d] bytes)", floor, floor + unit - 1))
                sub:add(f.qdepth_code, ttl.range, code)
                sub:add(f.qdepth_unit, ttl.range, unit)
                -- as lumina decode prints it
                if unit > 1 then
                    meta = meta .. string.format(" qdepth=%d..%d", floor, floor + unit - 1)
                else
                    meta = meta .. string.format(" qdepth=%d", floor)
                end
            end
            if raw then
                local csum = first(fx.udp_csum)
                if csum then
                    sub:add(f.udp_src, csum.range, csum.value)
                end
            end
            sub:append_text(", " .. meta)
            suffix = " [mirror " .. meta .. "]"
        else
            sub:append_text(" (not a mirror copy)")
        end
        if truncated then
            sub:add(f.caplen, tvb(0, caplen), caplen)
            sub:add(f.len, tvb(0, caplen), len)
            sub:add_proto_expert_info(ex_truncated,
                string.format("truncated (snap-len): %d of %d RoCE bytes captured", caplen, len))
        end
    end

    -- The InfiniBand dissector decodes the headers of a truncated copy, then
    -- finds the payload shorter than the IP length says and replaces the
    -- Info column by "Invalid Packet Length from LRH! [Malformed Packet]"
    -- (behind a fence). A copy cut inside its headers makes it throw
    -- (Wireshark then shows "Packet size limited during capture" in the
    -- tree), which ends this function too: the Info column is therefore
    -- written by the postdissector below, from pending.
    local info
    if truncated then
        if caplen >= 12 then
            info = roce_info(tvb) -- the opcode, QP and PSN it replaced
        else
            info = "RoCEv2, BTH cut"
        end
        info = info .. string.format(" [truncated: %d of %d bytes]", caplen, len)
    elseif caplen >= 12 and tvb(0, 1):uint() == 0x81 then
        info = roce_info(tvb) -- CNP: unknown to the InfiniBand dissector
    end
    pending = { number = pinfo.number, info = info, suffix = suffix }
    pcall(rroce.call, rroce, tvb, pinfo, tree)
    return caplen
end

-- RoCEv2 over UDP 4791 (copies the dumper restored, and any RoCEv2 frame).
function lumina.dissector(tvb, pinfo, tree)
    local mode = lumina.prefs.mirror
    local mirror = mode == MIRROR_ON
    if mode == MIRROR_AUTO then
        local src, ttl = first(fx.eth_src), first(fx.ip_ttl) or first(fx.ip6_hlim)
        local b0 = src and src.range(0, 1):uint()
        mirror = src ~= nil and ttl ~= nil and b0 % 2 == 0 and b0 < 64 and src.range(1, 1):uint() == 0 and
            (ttl.value <= 7 or canonical_depth(depth_code(ttl.value, tvb)))
    end
    return dissect_roce(tvb, pinfo, tree, mirror, false)
end

-- Raw mirror copies, addressed to the mirror port.
local raw = Proto("lumina_raw", "Lumina raw mirror copy")

function raw.dissector(tvb, pinfo, tree)
    if tvb:len() < 12 or lumina.prefs.mirror == MIRROR_OFF then
        return 0
    end
    return dissect_roce(tvb, pinfo, tree, true, true)
end

-- The postdissector writes the Info column of the RoCE frames above and of
-- the wrapped copies below (it runs even when the dissector called threw).
local post = Proto("lumina_info", "Lumina Info column")

function post.dissector(tvb, pinfo, tree)
    local p = pending
    if not p or p.number ~= pinfo.number then
        return
    end
    pending = nil
    if p.info then
        pinfo.cols.info:clear_fence()
        pinfo.cols.info:set(p.info)
    end
    append_info(pinfo, p.suffix)
end

register_postdissector(post)

-- Wrapped PFC/PAUSE mirror copies, EtherType 0x88B5.
local wrap = Proto("lumina_mac", "Lumina mirror copy (wrapped frame)")
local WRAP_HDR = 4 -- event, flags, port: the part after the EtherType

function wrap.dissector(tvb, pinfo, tree)
    if tvb:len() < WRAP_HDR then
        return 0
    end
    local dst, src = first(fx.eth_dst), first(fx.eth_src)
    local event = tvb(0, 1):uint()
    local flags = tvb(1, 1):uint()
    local port = tvb(2, 2):uint()
    local sub = tree:add(lumina, tvb(0, WRAP_HDR))
    local meta = add_meta(sub, dst, src, event, tvb(0, 1))
    local ft = sub:add(f.flags, tvb(1, 1), flags)
    ft:add(f.sent, tvb(1, 1))
    sub:add(f.port, tvb(2, 2), port)
    local dir = flags % 2 == 1 and "sent" or "recv"
    meta = string.format("%s %s port %d", meta, dir, port)
    sub:append_text(", " .. meta)
    pending = { number = pinfo.number, suffix = " [mirror " .. meta .. "]" }
    if tvb:len() > WRAP_HDR then
        eth:call(tvb(WRAP_HDR):tvb(), pinfo, tree)
    end
    return tvb:len()
end

udp_table:add(4791, lumina)
DissectorTable.get("ethertype"):add(0x88B5, wrap)

local registered_port = lumina.prefs.mirror_port
udp_table:add(registered_port, raw)

function lumina.prefs_changed()
    if lumina.prefs.mirror_port ~= registered_port then
        udp_table:remove(registered_port, raw)
        registered_port = lumina.prefs.mirror_port
        udp_table:add(registered_port, raw)
    end
end
