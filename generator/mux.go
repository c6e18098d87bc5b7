package generator

// Mux shares one Device among several requesters and responder sessions
// (a host that is requester of some flows and responder of others, #30):
// a Device has one completion handler, so the Mux takes it and hands each
// completion to the handler registered for its QPN. A Requester or Serve
// given a Mux registers a handler for each QP it creates (QPHandler);
// given a bare Device it takes the device's one handler, and then it must
// be the device's only user.
//
// A Mux is a Device: its other methods are the device's. Like the
// device's, its methods must be called on the device's Loop.
type Mux struct {
	Device
	handlers map[uint32]func(Completion)
	// other receives completions of QPs without a handler of their own
	// (SetCompletionHandler); nil drops them.
	other func(Completion)
}

// QPHandler is a Device that delivers each QP's completions to a handler
// of its own (Mux).
type QPHandler interface {
	Device
	// HandleQP makes the completions of QP qpn call fn (on the Loop); a
	// nil fn removes the QP's handler.
	HandleQP(qpn uint32, fn func(Completion))
}

var _ QPHandler = (*Mux)(nil)

// NewMux takes dev's completion handler and returns a Mux over it. Call it
// on the device's Loop, before any QP has completions.
func NewMux(dev Device) *Mux {
	m := &Mux{Device: dev, handlers: map[uint32]func(Completion){}}
	dev.SetCompletionHandler(m.dispatch)
	return m
}

// HandleQP implements QPHandler.
func (m *Mux) HandleQP(qpn uint32, fn func(Completion)) {
	if fn == nil {
		delete(m.handlers, qpn)
		return
	}
	m.handlers[qpn] = fn
}

// SetCompletionHandler sets the handler of the completions of QPs that
// have none of their own; it does not replace the per-QP handlers.
func (m *Mux) SetCompletionHandler(fn func(Completion)) { m.other = fn }

func (m *Mux) dispatch(c Completion) {
	if fn := m.handlers[c.QPN]; fn != nil {
		fn(c)
		return
	}
	if m.other != nil {
		m.other(c)
	}
}

// handleQPs routes the completions of qps to fn: through the device's
// per-QP handlers when it has them (a Mux), else as the device's one
// completion handler. Call it on the device's Loop.
func handleQPs(dev Device, qps []QP, fn func(Completion)) {
	h, ok := dev.(QPHandler)
	if !ok {
		dev.SetCompletionHandler(fn)
		return
	}
	for _, qp := range qps {
		h.HandleQP(qp.QPN(), fn)
	}
}
