package generator

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// The control protocol between requester and responder: one JSON object per
// line over a TCP connection (portable, unlike the public tool's native C
// structs). Every message has exactly one non-nil field.
//
//	requester → responder  {"hello": {...}}            traffic parameters and the requester's QPs
//	responder → requester  {"ready": {...}}            the responder's QPs and memory (RECVs posted)
//	requester → responder  {"complete": {...}}         traffic is over
//	responder → requester  {"bye": {...}}              the responder's own results
//	either way             {"error": "..."}            abort, with the reason
type message struct {
	Hello    *hello          `json:"hello,omitempty"`
	Ready    *ready          `json:"ready,omitempty"`
	Complete *complete       `json:"complete,omitempty"`
	Bye      *ResponderStats `json:"bye,omitempty"`
	Error    string          `json:"error,omitempty"`
}

const protocolVersion = 1

type hello struct {
	Version int        `json:"version"`
	Traffic Traffic    `json:"traffic"`
	QPs     []Endpoint `json:"qps"`
}

type ready struct {
	QPs []Endpoint `json:"qps"`
}

type complete struct {
	OK bool `json:"ok"`
}

// Endpoint is one side of a QP connection as exchanged on the control
// connection and reported to the control plane.
type Endpoint struct {
	IP   string `json:"ip"`
	MAC  string `json:"mac"`
	QPN  uint32 `json:"qpn"`
	IPSN uint32 `json:"ipsn"`
	// Memory the peer may WRITE to / READ from (responder only).
	Addr uint64 `json:"addr,omitempty"`
	RKey uint32 `json:"rkey,omitempty"`
	Len  int    `json:"len,omitempty"`
}

// ErrProtocol is returned for malformed or unexpected control messages.
var ErrProtocol = errors.New("generator: control protocol error")

// ctl is a framed control connection.
type ctl struct {
	conn net.Conn
	r    *bufio.Reader
	enc  *json.Encoder
}

func newCtl(c net.Conn) *ctl {
	return &ctl{conn: c, r: bufio.NewReaderSize(c, 64<<10), enc: json.NewEncoder(c)}
}

func (c *ctl) send(m message, deadline time.Time) error {
	c.conn.SetWriteDeadline(deadline)
	if err := c.enc.Encode(m); err != nil {
		return fmt.Errorf("generator: sending to %v: %w", c.conn.RemoteAddr(), err)
	}
	return nil
}

// recv reads one message; an "error" message becomes an error.
func (c *ctl) recv(deadline time.Time) (message, error) {
	c.conn.SetReadDeadline(deadline)
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		return message{}, fmt.Errorf("generator: reading from %v: %w", c.conn.RemoteAddr(), err)
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, fmt.Errorf("%w: %v", ErrProtocol, err)
	}
	if m.Error != "" {
		return message{}, fmt.Errorf("generator: peer %v: %s", c.conn.RemoteAddr(), m.Error)
	}
	return m, nil
}
