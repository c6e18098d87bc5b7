// Package events reports, for every packet the switch tagged delay,
// reorder or duplicate (roce.EventDelay, EventReorder, EventDuplicate),
// what the trace shows the switch did, and, when the run metadata lists
// the programmed events (model.Meta.Events, JSON "injected_events"),
// whether that is what was configured.
//
// A flow is one connection in one direction: "data" (WRITE/SEND requests,
// READ responses) or "response" (the ACKs and NAKs of a WRITE/SEND
// connection; READ requests on a READ connection). For each tagged packet:
//
//   - delay: hold_ns = how long the switch held it. When the trace carries
//     holds (Params.MirrorHolds: the copy's hold field, roce.EncodeHold)
//     it is the switch's departure minus the packet's own arrival
//     (arrival_ns), rounded down to hold_unit_ns; check: pass if
//     hold_ns + hold_unit_ns > delay_ns, fail otherwise. Without holds it
//     is its mirror timestamp minus that of its predecessor: the last
//     packet of the flow with PSN PSN−1 before it, else the flow's
//     previous packet, which passed the switch before the packet arrived,
//     so hold_ns ≥ the configured delay; check: margin = hold_ns −
//     delay_ns; pass if margin ≥ 0, inconclusive if −U ≤ margin < 0 (U:
//     the timestamp uncertainty, Params.TimestampUncertaintyNs), fail
//     below −U.
//   - reorder: depth = with holds, the packets of its flow that left
//     after its arrival and before it (originals, copies, released
//     packets: what the switch counts), where reorder-held packets that
//     left at its very instant are depth_ambiguous (released with it, or
//     its overtaker); without, the packets of the flow with a later PSN
//     between its predecessor and it. hold_ns as for delay. Check: pass if
//     depth ≤ overtakers ≤ depth + depth_ambiguous, or if fewer and it was
//     released by the longest hold (hold_ns ≥ max_hold_ns as above); fail
//     otherwise.
//   - duplicate: copies = the packets tagged duplicate that follow the
//     original (untagged) with its PSN, before any other packet of the
//     flow. Check: copies == the configured copies.
//
// occurrence counts the tagged packets of the same type, flow and PSN
// (1 for the first); the n-th occurrence is matched with the configured
// event of the n-th smallest ITER for that type, flow and PSN, whose iter
// is reported. A tagged packet that matches no configured event fails
// ("not configured"). Without Meta.Events the entries carry measurements
// only and the verdict is skip. A trace without tagged packets has no
// events section.
//
// The flow history kept per flow is the last 64 packets (512 departures on
// a flow with a configured reorder event): a predecessor or overtakers
// further back are not found (the flow's previous packet is used; depth
// counts what is kept).
package events
