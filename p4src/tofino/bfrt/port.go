package bfrt

import (
	"context"
	"fmt"

	"github.com/netlumina/lumina/roce"

	pb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
)

// PFCEnable is the $PORT write that turns PFC on for priorities (bit n:
// priority n) on a NIC-facing device port: the MAC honours received PFC
// for them ($RX_PFC_EN_MAP) and sends PFC for them from the traffic
// manager's XOFF ($TX_PFC_EN_MAP). Field names: open-p4studio's
// bf_rt_port_tf{1,2}.json. The port manager documents the PFC maps as
// settings made before the port is enabled (bf_port_flow_control_pfc_set);
// whether the server applies them to a port that is up is for hardware to
// tell (docs/tofino.md §8).
func PFCEnable(port uint32, priorities uint8) Write {
	return Write{pb.Update_MODIFY, Entry{Table: "$PORT", Keys: []KV{{"$DEV_PORT", uint64(port)}},
		Data: []KV{{"$TX_PFC_EN_MAP", uint64(priorities)}, {"$RX_PFC_EN_MAP", uint64(priorities)}}}}
}

// PortPFC is a port's per-priority PFC frame counts from the MAC.
type PortPFC struct {
	// Tx[n], Rx[n]: $Pri<n>FramesTransmitted, $Pri<n>FramesReceived (the
	// UMAC RMON counters 55–70 of open-p4studio's bf_rmon.h, which sit with
	// the pause counters; read here as PFC frames with priority n enabled,
	// unverified on hardware).
	Tx, Rx [roce.PFCPriorities]uint64
}

// ReadPortPFC reads port's per-priority PFC counters from $PORT_STAT.
func (c *Client) ReadPortPFC(ctx context.Context, port uint32) (PortPFC, error) {
	var out PortPFC
	es, err := c.Read(ctx, Entry{Table: "$PORT_STAT", Keys: []KV{{"$DEV_PORT", uint64(port)}}}, 1)
	if err != nil {
		return out, err
	}
	if len(es) != 1 {
		return out, fmt.Errorf("bfrt: $PORT_STAT: no entry for port %d", port)
	}
	for p := range roce.PFCPriorities {
		if out.Tx[p], err = es[0].Uint(fmt.Sprintf("$Pri%dFramesTransmitted", p)); err != nil {
			return out, err
		}
		if out.Rx[p], err = es[0].Uint(fmt.Sprintf("$Pri%dFramesReceived", p)); err != nil {
			return out, err
		}
	}
	return out, nil
}
