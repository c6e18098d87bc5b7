package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/netlumina/lumina/internal/safefile"
)

// Defaults and limits that the schema (schema.go) and the checks share.
const (
	defaultMTU        = 1024 // also PacketsPerMessage's for a zero MTU
	defaultNumDumpers = 2
	maxQPs            = 16384
	maxDumpers        = 16
	maxExpandedEvents = 1 << 16 // the switch's event table (p4src/lumina.p4 EVENT_SLOTS)
	roceUDPPort       = 4791
	maxWorkers        = 128 // the dumper's own limit (dumper.Config.Workers)
)

// MaxRepeats is the largest num-repeats: every repeat is a full run with
// its own results directory.
const MaxRepeats = 10000

// MaxNetnsSlowdown is the largest netns-slowdown: at 10000 a 1 s timeout
// takes almost 3 hours of wall time.
const MaxNetnsSlowdown = 10000

// MaxFileSize is the size limit, in bytes, of a test file: Load reads at
// most MaxFileSize+1 bytes of a regular file and refuses a larger one with
// an error wrapping ErrFileTooLarge; a FIFO or a device is refused
// unread, without blocking (safefile.ErrNotRegular). 4 MiB is more than
// a thousand times the size of any real test.
const MaxFileSize = 4 << 20

// ErrFileTooLarge is wrapped by Load's error for a file larger than
// MaxFileSize. It is not an ErrInvalid: the file was not parsed.
var ErrFileTooLarge = errors.New("file too large")

// Load reads the test file at path and parses it with Parse. An unreadable
// file, or one larger than MaxFileSize, gives an error that wraps the os
// error (or ErrFileTooLarge) and names the path; an invalid one gives an
// ErrorList.
func Load(path string) (*Test, error) {
	return LoadWith(path, LoadOptions{})
}

// LoadOptions are overrides that Load applies after parsing, as lumina
// run's flags do, so that a file can be validated for the run it will get.
type LoadOptions struct {
	// Testbed, if not nil, overrides the file's testbed as
	// (*Test).WithTestbed does (lumina run --testbed).
	Testbed *Testbed
	// Resources are the machine's limits to check the test against (see
	// Resources); the zero value checks only what does not depend on the
	// machine.
	Resources Resources
	// Personalities makes ParseWith read and check the personality files
	// that nic.personality names (relative to the test file), as the run
	// will load them: a missing one is an error at the personality value,
	// an invalid one errors at FILE:LINE:COL in it (docs/personality.md).
	// lumina validate and run set it; it is off otherwise, so that a run
	// directory's config.yaml loads where those files are not.
	Personalities bool
	// NoDPDK says that the binary that runs the test was built without
	// the dpdk dumper backend (lumina sets it from dumper.DPDKAvailable):
	// backend dpdk on testbed netns, whose dumpers run in it, is refused.
	// Default false: not checked.
	NoDPDK bool
	// Warn, if set, receives the warnings of a valid file: what runs but
	// deserves a look (Msg starts with "warning: "): results that fit the
	// disk or the spool only if the trace stays below its estimate's upper
	// end, a netns traffic limit of more than MaxNetnsWallTime on the wall
	// clock, and Warnings.
	// Default nil: none reported.
	Warn func(Error)
	// Set overrides keys of the file before it is decoded (lumina run
	// --set; see Setting). Default none.
	Set []Setting
}

// LoadWith is Load with overrides: ParseWith of the file's contents.
func LoadWith(path string, o LoadOptions) (*Test, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseWith(path, data, o)
}

// readFile reads at most MaxFileSize bytes of path.
func readFile(path string) ([]byte, error) {
	tooLarge := func() error {
		return fmt.Errorf("config: test file %s is larger than the %d MiB limit (config.MaxFileSize): %w", path, MaxFileSize>>20, ErrFileTooLarge)
	}
	data, err := safefile.ReadFile(path, MaxFileSize, safefile.Options{})
	if errors.Is(err, safefile.ErrTooLarge) {
		return nil, tooLarge()
	}
	if err != nil {
		return nil, fmt.Errorf("config: reading test file %s: %w", path, err)
	}
	return data, nil
}

// Parse parses a test file. file is used for error positions, for
// Test.File and for the default Test.Name. It returns the resolved Test,
// or nil and an ErrorList (matched by errors.Is(err, ErrInvalid)) holding
// every problem found, each with file:line:col.
func Parse(file string, data []byte) (t *Test, err error) {
	return ParseWith(file, data, LoadOptions{})
}

// ParseWith is Parse with overrides. With o.Testbed, the file must be
// valid as it is (lumina run loads it so) and also after
// WithTestbed(o.Testbed); the returned Test is the overridden one, and the
// errors of the override point into the file, at the keys concerned.
func ParseWith(file string, data []byte, o LoadOptions) (t *Test, err error) {
	defer func() {
		// Nothing in this package should panic, but a YAML library bug must
		// not take the caller down with it.
		if r := recover(); r != nil {
			t, err = nil, ErrorList{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("internal error while parsing: %v", r)}}
		}
	}()
	root, errs := parseYAML(file, data)
	var setAt map[[2]int]string
	if errs == nil && len(o.Set) > 0 {
		setAt, errs = applySettings(file, root, o.Set)
	}
	if errs == nil {
		errs = mappingLimit(file, root)
	}
	if errs != nil {
		return nil, errs.finish()
	}
	d := newDecoder(file)
	var perrs ErrorList // in personality files, after the test file's
	t = d.test(root)
	if t != nil {
		d.resolve(t)
		d.validate(t)
		if o.Testbed != nil && len(d.errs) == 0 {
			t = d.override(t, *o.Testbed)
		}
		if o.Personalities {
			perrs = d.checkPersonalities(t)
		}
		if len(d.errs) == 0 && len(perrs) == 0 {
			d.checkNICModels(t)
			d.checkResources(t, o.Resources)
			d.checkBinary(t, o)
			if len(d.errs) == 0 && o.Warn != nil {
				for _, w := range d.warns {
					o.Warn(w)
				}
				d.warnNetnsLimit(t, o.Warn)
				for _, e := range Warnings(t) {
					o.Warn(*e)
				}
			}
		}
	}
	if len(d.errs) > 0 || len(perrs) > 0 {
		errs := append(d.errs.finish(), perrs...)
		annotate(errs, file, setAt, o.Set)
		return nil, errs
	}
	return t, nil
}

// New returns the test named name that a file setting nothing else
// describes: every default of the schema table and those that depend on
// other keys (testbed sim, personality spec, two sim dumpers). Programs
// that build tests (collie's lumina engine) start from it and change what
// they need, then call Validate.
func New(name string) *Test {
	d := newDecoder("")
	t := &Test{}
	setDefaults(topSection, reflect.ValueOf(t).Elem())
	t.Name = name
	d.resolve(t)
	return t
}

// Validate checks t by every rule Parse applies to a file: it parses t's
// canonical YAML (Marshal), so that a test built in code is refused
// exactly where the same test written as a file would be. The errors (an
// ErrorList) point into that YAML.
func (t *Test) Validate() error {
	data, err := t.Marshal()
	if err != nil {
		return err
	}
	name := t.File
	if name == "" {
		name = t.Name + ".yaml"
	}
	_, err = Parse(name, data)
	return err
}

var (
	yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	anchorRE   = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// lineCol returns the 1-based line and column of byte offset off in data.
func lineCol(data []byte, off int) (line, col int) {
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// parseYAML parses data into the top-level node of its single document.
func parseYAML(file string, data []byte) (*yaml.Node, ErrorList) {
	root, errs := parseDoc(file, data, "a test file")
	if errs != nil {
		return nil, errs
	}
	if root == nil || isNull(root) {
		line, col := 1, 1
		if root != nil {
			line, col = max(root.Line, 1), max(root.Column, 1)
		}
		return nil, ErrorList{{File: file, Line: line, Col: col, Msg: "empty test file: want a mapping with the test's keys"}}
	}
	return root, nil
}

// parseDoc parses the one YAML document of data (what names the kind of
// file in messages): its root node, nil when the file holds no document,
// or the syntax errors (see parseYAML).
func parseDoc(file string, data []byte, what string) (*yaml.Node, ErrorList) {
	syntax := func(err error) ErrorList {
		msg := err.Error()
		line := 1
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				line = n
			}
			msg = m[2]
		} else {
			msg = strings.TrimPrefix(msg, "yaml: ")
		}
		col := 1
		if m := anchorRE.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				line, col = lineCol(data, i)
			}
		} else if strings.HasPrefix(msg, "control characters") {
			if i := bytes.IndexFunc(data, func(r rune) bool {
				return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f
			}); i >= 0 {
				line, col = lineCol(data, i)
			}
		}
		return ErrorList{{File: file, Line: line, Col: col, Msg: "YAML syntax error: " + msg}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntax(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		line, col := next.Line, next.Column
		if len(next.Content) > 0 {
			line, col = next.Content[0].Line, next.Content[0].Column
		}
		return nil, ErrorList{{File: file, Line: max(line, 1), Col: max(col, 1), Msg: "more than one YAML document: " + what + " holds exactly one"}}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntax(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// defaultName is the file's base name without its extension, or "test"
// if that is not a safe name (a path component of printable characters).
func defaultName(file string) string {
	base := filepath.Base(file)
	if base == "." || base == string(filepath.Separator) || base == "-" {
		return "test"
	}
	if ext := filepath.Ext(base); ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	if _, _, unsafe := unsafeNameChar(base); unsafe || !pathComponent(base) {
		return "test"
	}
	return base
}
