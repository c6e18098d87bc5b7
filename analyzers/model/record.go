package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/netlumina/lumina/internal/safefile"
)

// A run's report.json (and the generator's record it copies) holds lists
// with one entry per message: generator.qps[].message_completion_ns. No
// reader of a record in the analysis (ParseMeta, ApplyRunRecord) uses
// them, and at 100,000 messages they are most of the file, so reading the
// file whole made the analysis's memory grow with the number of messages
// (issue #36, item 3). ReadRecord streams the file instead and keeps
// these lists out of the bytes it returns.

// readRecordBuf is the size of ReadRecord's read buffer: the memory a
// skipped list costs, whatever its length.
const readRecordBuf = 32 << 10

// ReadRecord reads the JSON record at path as safefile.ReadFile(path,
// limit, o) does — the same refusals (symbolic link with o.NoFollow, not
// a regular file, above limit) and errors — but returns the file with
// every generator.qps[].message_completion_ns list that is a valid list
// of JSON numbers replaced by [], reading it in a bounded buffer. A
// decoder of the result gets the same values and the same errors as one
// of the whole file, for every field but those lists (which no reader
// here decodes): the lists are replaced only when the result is valid
// JSON, else the file is read whole.
func ReadRecord(path string, limit int64, o safefile.Options) ([]byte, error) {
	f, err := safefile.Open(path, o)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func() error {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: above the %s limit", safefile.ErrTooLarge, safefile.Size(limit))}
	}
	st, err := f.Stat()
	if err == nil && st.Size() > limit {
		return nil, tooLarge()
	}
	size := int64(0)
	if err == nil {
		size = st.Size()
	}
	out, err := filterRecord(f, size, limit)
	if err == errTooLarge {
		return nil, tooLarge()
	}
	return out, err
}

// ReadRecordFile reads the JSON record at path as os.ReadFile does (no
// limit, links followed), with the per-message lists replaced as
// ReadRecord replaces them when path is a regular file.
func ReadRecordFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return os.ReadFile(path) // as before: a FIFO, a directory's error
	}
	return filterRecord(f, st.Size(), -1)
}

var (
	errTooLarge = errors.New("too large")
	// errWhole says a list to replace is not a list of numbers: the file
	// is read whole.
	errWhole = errors.New("read whole")
)

// filterRecord reads f (a regular file of size bytes, at its start) to
// its end, at most limit bytes (limit < 0: no limit; more gives
// errTooLarge), and returns its bytes with the per-message lists replaced (ReadRecord). When the
// result is not valid JSON (so that the replacement could change what a
// decoder says), it reads f again whole and returns that.
func filterRecord(f io.ReadSeeker, size, limit int64) ([]byte, error) {
	var out bytes.Buffer
	if size > 0 {
		// At most readRecordBuf ahead of what a file with long lists
		// needs; the buffer grows as the file's other bytes need.
		out.Grow(int(min(size, readRecordBuf)) + 1)
	}
	s := recordFilter{r: bufio.NewReaderSize(f, readRecordBuf), out: &out, limit: limit}
	skipped, err := s.run()
	if err != nil && err != errWhole {
		return nil, err
	}
	if err == nil && (!skipped || json.Valid(out.Bytes())) {
		return out.Bytes(), nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	r := io.Reader(f)
	if limit >= 0 {
		r = io.LimitReader(f, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if limit >= 0 && int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return b, nil
}

// recordFilter copies a JSON text, following its structure (strings,
// objects, arrays) as far as needed to find the lists it replaces; it
// does not check the rest, which the decoder of its output does.
type recordFilter struct {
	r     *bufio.Reader
	out   *bytes.Buffer
	limit int64
	n     int64 // bytes read
	// stack holds, for each open object or array, its kind and for an
	// object the key of the value being read (when short and unescaped).
	stack []frame
	deep  int          // open objects and arrays below the stack's maxDepth
	key   [maxKey]byte // the key being read
	nkey  int          // its length, -1 when longer than maxKey or escaped
}

type frame struct {
	array bool
	key   keyName // an object's current key, when one of the path's
	inKey bool    // an object expecting (or reading) a key
}

// keyName is a key of the path to a replaced list, or none.
type keyName uint8

const (
	keyOther keyName = iota
	keyGenerator
	keyQPs
	keyCompletion
)

// maxDepth is the depth recordFilter follows (the lists are at 5).
const maxDepth = 5

// maxKey is the longest key recordFilter remembers.
const maxKey = len("message_completion_ns")

func (s *recordFilter) keyName() keyName {
	if s.nkey < 0 {
		return keyOther
	}
	switch string(s.key[:s.nkey]) { // no allocation
	case "generator":
		return keyGenerator
	case "qps":
		return keyQPs
	case "message_completion_ns":
		return keyCompletion
	}
	return keyOther
}

func (s *recordFilter) read() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, err
	}
	s.n++
	if s.limit >= 0 && s.n > s.limit {
		return 0, errTooLarge
	}
	return c, nil
}

// atList says whether a value starting now is
// generator.qps[i].message_completion_ns.
func (s *recordFilter) atList() bool {
	st := s.stack
	return len(st) == 4 && !st[0].array && st[0].key == keyGenerator &&
		!st[1].array && st[1].key == keyQPs && st[2].array &&
		!st[3].array && st[3].key == keyCompletion
}

// run copies the input to out; it says whether it replaced a list.
func (s *recordFilter) run() (bool, error) {
	skipped := false
	for {
		c, err := s.read()
		if err == io.EOF {
			return skipped, nil
		}
		if err != nil {
			return false, err
		}
		var top *frame
		if len(s.stack) > 0 && s.deep == 0 {
			top = &s.stack[len(s.stack)-1]
		}
		switch c {
		case '"':
			s.out.WriteByte(c)
			inKey := top != nil && !top.array && top.inKey
			if err := s.str(inKey); err != nil {
				return false, err
			}
			if inKey {
				top.key, top.inKey = s.keyName(), false
			}
			continue
		case '[':
			if s.atList() {
				if err := s.list(); err != nil {
					return false, err
				}
				skipped = true
				continue
			}
			s.push(frame{array: true})
		case '{':
			s.push(frame{inKey: true})
		case ']', '}':
			if s.deep > 0 {
				s.deep--
			} else if top != nil {
				s.stack = s.stack[:len(s.stack)-1]
			}
		case ',':
			if top != nil && !top.array {
				top.inKey, top.key = true, keyOther
			}
		}
		s.out.WriteByte(c)
	}
}

func (s *recordFilter) push(f frame) {
	if len(s.stack) < maxDepth {
		s.stack = append(s.stack, f)
	} else {
		s.deep++
	}
}

// str copies a string's bytes after its opening quote; for a key, it
// keeps it in s.key (s.nkey -1 when longer than maxKey or escaped).
func (s *recordFilter) str(key bool) error {
	s.nkey = 0
	keep := key
	for {
		c, err := s.read()
		if err == io.EOF {
			return nil // the decoder says it
		}
		if err != nil {
			return err
		}
		s.out.WriteByte(c)
		switch c {
		case '"':
			if !keep {
				s.nkey = -1
			}
			return nil
		case '\\':
			keep = false
			c, err := s.read()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			s.out.WriteByte(c)
			continue
		}
		if keep && s.nkey < maxKey {
			s.key[s.nkey] = c
			s.nkey++
		} else {
			keep = false
		}
	}
}

// list reads a list after its '[': a valid list of JSON numbers becomes
// [] in out. Anything else gives errWhole: filterRecord reads the file
// whole (a skipped list is not kept, so it cannot be copied).
func (s *recordFilter) list() error {
	var num numScan
	// 0: after '[', 1: in a number, 2: after ',', 3: after a number and
	// blanks.
	state := 0
	for {
		c, err := s.read()
		if err == io.EOF {
			return errWhole
		}
		if err != nil {
			return err
		}
		blank := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		switch {
		case state == 1 && num.step(c):
		case state == 1 && !num.end():
			return errWhole
		case state == 1 && blank:
			state = 3
		case blank:
		case c == ']' && state != 2:
			s.out.WriteString("[]")
			return nil
		case c == ',' && (state == 1 || state == 3):
			state = 2
		case (state == 0 || state == 2) && num.start(c):
			state = 1
		default:
			return errWhole
		}
	}
}

// numScan follows a JSON number (RFC 8259 section 6):
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
type numScan struct{ st int8 }

const (
	numMinus = iota + 1 // after '-'
	numZero             // after a leading 0
	numInt              // in the integer's digits
	numDot              // after '.'
	numFrac             // in the fraction's digits
	numE                // after 'e'
	numESign            // after the exponent's sign
	numExp              // in the exponent's digits
)

// start begins a number with c.
func (n *numScan) start(c byte) bool {
	*n = numScan{}
	return n.step(c)
}

// step says whether c continues the number.
func (n *numScan) step(c byte) bool {
	digit := '0' <= c && c <= '9'
	switch n.st {
	case 0:
		switch {
		case c == '-':
			n.st = numMinus
		case c == '0':
			n.st = numZero
		case digit:
			n.st = numInt
		default:
			return false
		}
	case numMinus:
		switch {
		case c == '0':
			n.st = numZero
		case digit:
			n.st = numInt
		default:
			return false
		}
	case numZero, numInt:
		switch {
		case digit && n.st == numInt:
		case c == '.':
			n.st = numDot
		case c == 'e' || c == 'E':
			n.st = numE
		default:
			return false
		}
	case numDot, numFrac:
		switch {
		case digit:
			n.st = numFrac
		case c == 'e' || c == 'E':
			if n.st == numDot {
				return false
			}
			n.st = numE
		default:
			return false
		}
	case numE:
		switch {
		case c == '+' || c == '-':
			n.st = numESign
		case digit:
			n.st = numExp
		default:
			return false
		}
	case numESign, numExp:
		if !digit {
			return false
		}
		n.st = numExp
	}
	return true
}

// end says whether the number may end here.
func (n *numScan) end() bool {
	return n.st == numZero || n.st == numInt || n.st == numFrac || n.st == numExp
}
