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
//   - delay: hold_ns = its mirror timestamp (taken when it left the switch)
//     minus that of its predecessor: the last packet of the flow with PSN
//     PSN−1 before it, else the flow's previous packet. The predecessor
//     passed the switch before the packet arrived, so hold_ns ≥ the
//     configured delay. Check: margin = hold_ns − delay_ns; pass if
//     margin ≥ 0, inconclusive if −U ≤ margin < 0 (U: the timestamp
//     uncertainty, Params.TimestampUncertaintyNs), fail below −U.
//   - reorder: depth = the packets of the flow with a later PSN between its
//     predecessor and it; hold_ns as for delay. Check: pass if depth ==
//     overtakers, or if depth < overtakers and it was released by the
//     longest hold (hold_ns ≥ max_hold_ns; inconclusive within U below);
//     fail otherwise.
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
// The flow history kept per flow is the last 64 packets: a predecessor or
// overtakers further back are not found (the flow's previous packet is
// used; depth counts what is kept).
package events
