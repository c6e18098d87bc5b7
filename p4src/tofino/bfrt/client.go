package bfrt

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	pb "github.com/netlumina/lumina/proto/bfrt/bfrtpb"
)

// All pipes, both directions, all parsers: the BfRt target of an entry
// written to every pipe (the values bfrt_grpc's client.Target defaults
// to).
const (
	AllPipes   = 0xFFFF
	AllDirs    = 0xFF
	AllParsers = 0xFF
)

// DefaultPort is bf_switchd's BfRt gRPC port.
const DefaultPort = 50052

// Client is a BfRt client bound to one program on one device.
type Client struct {
	DeviceID, ClientID uint32
	P4Name             string
	Info               *Info

	rt     pb.BfRuntimeClient
	stream pb.BfRuntime_StreamChannelClient
	cancel context.CancelFunc
}

// Connect opens the stream, subscribes (no notifications), binds the
// client to program p4Name (SetForwardingPipelineConfig, action BIND) and
// reads the BfRt info of the program and the fixed-function tables. The
// stream stays open until Close: the server ties the client id to it.
func Connect(ctx context.Context, conn grpc.ClientConnInterface, deviceID, clientID uint32, p4Name string) (*Client, error) {
	c := &Client{DeviceID: deviceID, ClientID: clientID, P4Name: p4Name, rt: pb.NewBfRuntimeClient(conn)}
	sctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	var err error
	if c.stream, err = c.rt.StreamChannel(sctx); err != nil {
		cancel()
		return nil, fmt.Errorf("bfrt: stream: %w", err)
	}
	fail := func(err error) (*Client, error) { c.Close(); return nil, err }
	if err := c.stream.Send(c.SubscribeRequest()); err != nil {
		return fail(fmt.Errorf("bfrt: subscribe: %w", err))
	}
	done := make(chan error, 1)
	go func() {
		for {
			m, err := c.stream.Recv()
			if err != nil {
				done <- err
				return
			}
			if s := m.GetSubscribe(); s != nil {
				if st := s.GetStatus(); st.GetCode() != int32(codes.OK) {
					done <- fmt.Errorf("refused: %s (code %d)", st.GetMessage(), st.GetCode())
				} else {
					done <- nil
				}
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			return fail(fmt.Errorf("bfrt: subscribe: %w", err))
		}
	case <-ctx.Done():
		return fail(fmt.Errorf("bfrt: subscribe: %w", ctx.Err()))
	}
	// Drain notifications (none asked for) so the stream never blocks.
	go func() {
		for {
			if _, err := c.stream.Recv(); err != nil {
				return
			}
		}
	}()
	if _, err := c.rt.SetForwardingPipelineConfig(ctx, c.BindRequest()); err != nil {
		return fail(fmt.Errorf("bfrt: bind to program %s: %w", p4Name, err))
	}
	cfg, err := c.rt.GetForwardingPipelineConfig(ctx, &pb.GetForwardingPipelineConfigRequest{DeviceId: deviceID, ClientId: clientID})
	if err != nil {
		return fail(fmt.Errorf("bfrt: get the BfRt info: %w", err))
	}
	var prog []byte
	for _, pc := range cfg.GetConfig() {
		if pc.GetP4Name() == p4Name {
			prog = pc.GetBfruntimeInfo()
		}
	}
	if prog == nil {
		return fail(fmt.Errorf("%w: the device has no program %s", ErrInfo, p4Name))
	}
	if c.Info, err = ParseInfo(prog, cfg.GetNonP4Config().GetBfruntimeInfo()); err != nil {
		return fail(err)
	}
	return c, nil
}

// SubscribeRequest is the stream's first message.
func (c *Client) SubscribeRequest() *pb.StreamMessageRequest {
	return &pb.StreamMessageRequest{ClientId: c.ClientID, Update: &pb.StreamMessageRequest_Subscribe{
		Subscribe: &pb.Subscribe{DeviceId: c.DeviceID, Notifications: &pb.Subscribe_Notifications{}}}}
}

// BindRequest binds the client to its program.
func (c *Client) BindRequest() *pb.SetForwardingPipelineConfigRequest {
	return &pb.SetForwardingPipelineConfigRequest{DeviceId: c.DeviceID, ClientId: c.ClientID,
		Action: pb.SetForwardingPipelineConfigRequest_BIND, Config: []*pb.ForwardingPipelineConfig{{P4Name: c.P4Name}}}
}

// Close ends the stream.
func (c *Client) Close() {
	if c.stream != nil {
		c.stream.CloseSend()
	}
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *Client) target(pipe *uint32) *pb.TargetDevice {
	t := &pb.TargetDevice{DeviceId: c.DeviceID, PipeId: AllPipes, Direction: AllDirs, PrsrId: AllParsers}
	if pipe != nil {
		t.PipeId = *pipe
	}
	return t
}

// WriteRequest is the request Write sends for e: one update, all pipes.
func (c *Client) WriteRequest(typ pb.Update_Type, e Entry) (*pb.WriteRequest, error) {
	te, err := c.Info.tableEntry(e)
	if err != nil {
		return nil, err
	}
	return &pb.WriteRequest{Target: c.target(e.Pipe), ClientId: c.ClientID, P4Name: c.P4Name,
		Updates: []*pb.Update{{Type: typ, Entity: &pb.Entity{Entity: &pb.Entity_TableEntry{TableEntry: te}}}}}, nil
}

// Write writes one entry (INSERT, MODIFY, DELETE, ...). Errors name the
// table.
func (c *Client) Write(ctx context.Context, typ pb.Update_Type, e Entry) error {
	req, err := c.WriteRequest(typ, e)
	if err != nil {
		return err
	}
	resp, err := c.rt.Write(ctx, req)
	if err != nil {
		return fmt.Errorf("bfrt: %s %s: %w", typ, e.Table, err)
	}
	for _, st := range resp.GetStatus() {
		if st.GetCanonicalCode() != int32(codes.OK) {
			return fmt.Errorf("bfrt: %s %s: %s (code %d)", typ, e.Table, st.GetMessage(), st.GetCanonicalCode())
		}
	}
	return nil
}

// ReadRequest is the request Read sends for e (its keys; no keys: every
// entry of the table).
func (c *Client) ReadRequest(e Entry) (*pb.ReadRequest, error) {
	te, err := c.Info.tableEntry(Entry{Table: e.Table, Keys: e.Keys})
	if err != nil {
		return nil, err
	}
	return &pb.ReadRequest{Target: c.target(e.Pipe), ClientId: c.ClientID, P4Name: c.P4Name,
		Entities: []*pb.Entity{{Entity: &pb.Entity_TableEntry{TableEntry: te}}}}, nil
}

// Read reads the entries matching e's keys, at most limit of them.
func (c *Client) Read(ctx context.Context, e Entry, limit int) ([]Entry, error) {
	req, err := c.ReadRequest(e)
	if err != nil {
		return nil, err
	}
	st, err := c.rt.Read(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("bfrt: read %s: %w", e.Table, err)
	}
	var out []Entry
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("bfrt: read %s: %w", e.Table, err)
		}
		for _, s := range resp.GetStatus() {
			if s.GetCanonicalCode() != int32(codes.OK) {
				return nil, fmt.Errorf("bfrt: read %s: %s (code %d)", e.Table, s.GetMessage(), s.GetCanonicalCode())
			}
		}
		for _, en := range resp.GetEntities() {
			got, err := c.Info.entryOf(en.GetTableEntry())
			if err != nil {
				return nil, err
			}
			if len(out) == limit {
				return nil, fmt.Errorf("bfrt: read %s: more than %d entries", e.Table, limit)
			}
			out = append(out, got)
		}
	}
}
