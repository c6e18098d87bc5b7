package verbs

import "errors"

// Errors, besides the generator's (ErrQPState, ErrBadWR, ErrQueueFull,
// ErrBadConnect, ErrUnknownAddr), which the QP methods return as the
// software RNIC does.
var (
	// ErrNotBuilt: the binary was built without the verbs build tag.
	ErrNotBuilt = errors.New("verbs: built without verbs (go build -tags verbs)")
	// ErrNoDevice: no RDMA device, or not the one asked for.
	ErrNoDevice = errors.New("verbs: no RDMA device")
	// ErrNoGID: an address has no RoCE v2 GID on the port.
	ErrNoGID = errors.New("verbs: no RoCE v2 GID")
	// ErrPort: the port is not an active Ethernet (RoCE) port.
	ErrPort = errors.New("verbs: port not usable")
	// ErrConfig: the Config is incomplete.
	ErrConfig = errors.New("verbs: invalid config")
	// ErrNoODP: Config.ODP asks for On-Demand Paging memory and the device
	// cannot give it (ibv_query_device_ex's odp_caps).
	ErrNoODP = errors.New("verbs: no ODP")
	// ErrClosed: the device was closed.
	ErrClosed = errors.New("verbs: device closed")
)
