package generator

import (
	"bufio"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/netlumina/lumina/roce"
)

// The control protocol between requester and responder: one JSON object per
// line over a TCP connection (portable, unlike the public tool's native C
// structs). Every message has exactly one non-nil field.
//
//	requester → responder  {"auth": "SECRET"}          first, when the responder wants a secret (Authenticate)
//	requester → responder  {"hello": {...}}            traffic parameters and the requester's QPs
//	responder → requester  {"ready": {...}}            the responder's QPs and memory (RECVs posted)
//	requester → responder  {"complete": {...}}         traffic is over
//	responder → requester  {"bye": {...}}              the responder's own results
//	either way             {"error": "..."}            abort, with the reason
type message struct {
	Auth     string          `json:"auth,omitempty"`
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
// connection and reported to the control plane. In JSON its IP and MAC are
// the strings they were ("10.0.0.1", "02:00:00:00:00:01"), parsed once on
// the way in.
type Endpoint struct {
	IP   netip.Addr `json:"ip"`
	MAC  roce.MAC   `json:"mac"`
	QPN  uint32     `json:"qpn"`
	IPSN uint32     `json:"ipsn"`
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
		return message{}, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	if m.Error != "" {
		return message{}, fmt.Errorf("generator: peer %v: %s", c.conn.RemoteAddr(), m.Error)
	}
	return m, nil
}

// ErrAuth is returned by Authenticate when the peer did not present the
// secret.
var ErrAuth = errors.New("generator: the peer did not present the control connection's secret")

// maxAuthLine bounds the auth message Authenticate reads (a secret of up
// to a few hundred bytes, JSON-encoded).
const maxAuthLine = 1024

// Authenticate reads the first message of a responder's control
// connection, which must be {"auth": secret}, by deadline: a peer that
// sends something else, too much, or nothing is refused with ErrAuth (or
// the read's error) and should be closed; it has not taken the handshake
// (#38 point 4). It reads byte by byte up to the end of the line, so
// nothing after it is consumed: Serve then reads the hello.
func Authenticate(conn net.Conn, secret string, deadline time.Time) error {
	conn.SetReadDeadline(deadline)
	defer conn.SetReadDeadline(time.Time{})
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := conn.Read(b); err != nil {
			return fmt.Errorf("generator: reading the auth message from %v: %w", conn.RemoteAddr(), err)
		}
		if b[0] == '\n' {
			break
		}
		if line = append(line, b[0]); len(line) > maxAuthLine {
			return fmt.Errorf("%w: the first line from %v is longer than %d bytes", ErrAuth, conn.RemoteAddr(), maxAuthLine)
		}
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil || m.Hello != nil ||
		subtle.ConstantTimeCompare([]byte(m.Auth), []byte(secret)) != 1 || secret == "" {
		return fmt.Errorf("%w (%v)", ErrAuth, conn.RemoteAddr())
	}
	return nil
}
