package tofino

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Pipeline is bf-p4c's output for one P4 program.
type Pipeline struct {
	// Name is the program name (the .conf's program-name), "lumina".
	Name string
	// BFRuntime is bf-rt.json. Stratum needs it; the PI format has no
	// room for it.
	BFRuntime []byte
	// Profiles are the program's pipeline profiles; lumina.p4 has one,
	// "pipe", on every pipe.
	Profiles []Profile
}

// Profile is one pipeline profile.
type Profile struct {
	Name      string   // p4_pipeline_name, "pipe"
	Context   []byte   // context.json
	Binary    []byte   // tofino.bin
	PipeScope []uint32 // the hardware pipes the profile runs on
}

// Errors.
var (
	ErrFormat  = errors.New("tofino: malformed device config")
	ErrProfile = errors.New("tofino: the BF-SDE P4Runtime format holds exactly one pipeline profile")
	ErrConf    = errors.New("tofino: bad bf-p4c .conf")
)

// PackBFRuntime packs p for the BF-SDE's P4Runtime server (PI "tofino"
// target): name, tofino.bin and context.json of p's only profile, each
// after its little-endian u32 length.
func PackBFRuntime(p *Pipeline) ([]byte, error) {
	if len(p.Profiles) != 1 {
		return nil, fmt.Errorf("%w: have %d", ErrProfile, len(p.Profiles))
	}
	pr := p.Profiles[0]
	parts := [][]byte{[]byte(p.Name), pr.Binary, pr.Context}
	n := 0
	for _, b := range parts {
		if len(b) > math.MaxUint32 {
			return nil, fmt.Errorf("%w: part of %d bytes exceeds 4 GiB", ErrFormat, len(b))
		}
		n += 4 + len(b)
	}
	out := make([]byte, 0, n)
	for _, b := range parts {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

// UnpackBFRuntime reverses PackBFRuntime (the profile is named "pipe",
// which the format does not record).
func UnpackBFRuntime(b []byte) (*Pipeline, error) {
	var parts [3][]byte
	for i := range parts {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: truncated length of part %d", ErrFormat, i)
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if uint64(n) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: part %d claims %d bytes, %d left", ErrFormat, i, n, len(b))
		}
		parts[i], b = b[:n:n], b[n:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(b))
	}
	return &Pipeline{Name: string(parts[0]), Profiles: []Profile{{Name: "pipe", Binary: parts[1], Context: parts[2]}}}, nil
}

// BfPipelineConfig field numbers (stratum/hal/lib/barefoot/bf.proto).
const (
	fieldP4Name        = 1
	fieldBFRuntimeInfo = 2
	fieldProfiles      = 3

	fieldProfileName    = 1
	fieldProfileContext = 2
	fieldProfileBinary  = 3
	fieldPipeScope      = 4
)

// PackStratum packs p as a serialized BfPipelineConfig for Stratum.
// Empty fields are omitted (proto3), pipe_scope is packed.
func PackStratum(p *Pipeline) ([]byte, error) {
	if len(p.Profiles) == 0 {
		return nil, fmt.Errorf("%w: no pipeline profile", ErrFormat)
	}
	var out []byte
	if p.Name != "" {
		out = protowire.AppendTag(out, fieldP4Name, protowire.BytesType)
		out = protowire.AppendString(out, p.Name)
	}
	if len(p.BFRuntime) > 0 {
		out = protowire.AppendTag(out, fieldBFRuntimeInfo, protowire.BytesType)
		out = protowire.AppendBytes(out, p.BFRuntime)
	}
	for _, pr := range p.Profiles {
		var m []byte
		if pr.Name != "" {
			m = protowire.AppendTag(m, fieldProfileName, protowire.BytesType)
			m = protowire.AppendString(m, pr.Name)
		}
		if len(pr.Context) > 0 {
			m = protowire.AppendTag(m, fieldProfileContext, protowire.BytesType)
			m = protowire.AppendBytes(m, pr.Context)
		}
		if len(pr.Binary) > 0 {
			m = protowire.AppendTag(m, fieldProfileBinary, protowire.BytesType)
			m = protowire.AppendBytes(m, pr.Binary)
		}
		if len(pr.PipeScope) > 0 {
			var packed []byte
			for _, s := range pr.PipeScope {
				packed = protowire.AppendVarint(packed, uint64(s))
			}
			m = protowire.AppendTag(m, fieldPipeScope, protowire.BytesType)
			m = protowire.AppendBytes(m, packed)
		}
		out = protowire.AppendTag(out, fieldProfiles, protowire.BytesType)
		out = protowire.AppendBytes(out, m)
	}
	return out, nil
}

// UnpackStratum parses a serialized BfPipelineConfig. Unknown fields are
// skipped; pipe_scope may be packed or not.
func UnpackStratum(b []byte) (*Pipeline, error) {
	p := &Pipeline{}
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == fieldP4Name && typ == protowire.BytesType:
			p.Name = string(v)
		case num == fieldBFRuntimeInfo && typ == protowire.BytesType:
			p.BFRuntime = v
		case num == fieldProfiles && typ == protowire.BytesType:
			var pr Profile
			err := walk(v, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
				switch {
				case num == fieldProfileName && typ == protowire.BytesType:
					pr.Name = string(v)
				case num == fieldProfileContext && typ == protowire.BytesType:
					pr.Context = v
				case num == fieldProfileBinary && typ == protowire.BytesType:
					pr.Binary = v
				case num == fieldPipeScope && typ == protowire.VarintType:
					pr.PipeScope = append(pr.PipeScope, uint32(x))
				case num == fieldPipeScope && typ == protowire.BytesType:
					for len(v) > 0 {
						s, n := protowire.ConsumeVarint(v)
						if n < 0 {
							return fmt.Errorf("%w: pipe_scope: %v", ErrFormat, protowire.ParseError(n))
						}
						pr.PipeScope = append(pr.PipeScope, uint32(s))
						v = v[n:]
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			p.Profiles = append(p.Profiles, pr)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// walk calls fn for each field of a message: v is the payload of a
// length-delimited field, x the value of a varint.
func walk(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %v", ErrFormat, protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("%w: field %d: %v", ErrFormat, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}

// conf is the part of bf-p4c's <program>.conf Load reads.
type conf struct {
	P4Devices []struct {
		P4Programs []struct {
			ProgramName string `json:"program-name"`
			BFRTConfig  string `json:"bfrt-config"`
			P4Pipelines []struct {
				Name      string   `json:"p4_pipeline_name"`
				Context   string   `json:"context"`
				Config    string   `json:"config"`
				PipeScope []uint32 `json:"pipe_scope"`
			} `json:"p4_pipelines"`
		} `json:"p4_programs"`
	} `json:"p4_devices"`
}

// Load reads bf-p4c's <program>.conf and the files it names: bf-rt.json
// and each pipeline's context.json and tofino.bin. The .conf names them
// relative to the SDE install directory (share/tofinopd/lumina/pipe/…) or
// to the compiler's output directory; Load tries, in order, the path as
// is if absolute, $SDE_INSTALL/path, and the path and each of its
// suffixes under the .conf's directory — so both an installed program and
// a bare bf-p4c output directory load. The .conf must describe one device
// and one program.
func Load(confPath string) (*Pipeline, error) {
	b, err := os.ReadFile(confPath)
	if err != nil {
		return nil, err
	}
	var c conf
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrConf, confPath, err)
	}
	if len(c.P4Devices) != 1 || len(c.P4Devices[0].P4Programs) != 1 {
		return nil, fmt.Errorf("%w: %s: want one device with one program", ErrConf, confPath)
	}
	prog := c.P4Devices[0].P4Programs[0]
	dir := filepath.Dir(confPath)
	read := func(what, name string) ([]byte, error) {
		if name == "" {
			return nil, fmt.Errorf("%w: %s: no %s path", ErrConf, confPath, what)
		}
		for _, cand := range candidates(dir, name) {
			if b, err := os.ReadFile(cand); err == nil {
				return b, nil
			}
		}
		return nil, fmt.Errorf("%w: %s: %s %q not found (tried the .conf's directory and $SDE_INSTALL)", ErrConf, confPath, what, name)
	}
	p := &Pipeline{Name: prog.ProgramName}
	if prog.BFRTConfig != "" {
		if p.BFRuntime, err = read("bfrt-config", prog.BFRTConfig); err != nil {
			return nil, err
		}
	}
	if len(prog.P4Pipelines) == 0 {
		return nil, fmt.Errorf("%w: %s: no p4_pipelines", ErrConf, confPath)
	}
	for _, pl := range prog.P4Pipelines {
		pr := Profile{Name: pl.Name, PipeScope: pl.PipeScope}
		if pr.Context, err = read("context", pl.Context); err != nil {
			return nil, err
		}
		if pr.Binary, err = read("config", pl.Config); err != nil {
			return nil, err
		}
		p.Profiles = append(p.Profiles, pr)
	}
	return p, nil
}

func candidates(dir, name string) []string {
	if filepath.IsAbs(name) {
		return []string{name}
	}
	var out []string
	if sde := os.Getenv("SDE_INSTALL"); sde != "" {
		out = append(out, filepath.Join(sde, name))
	}
	parts := strings.Split(filepath.ToSlash(name), "/")
	for i := range parts {
		out = append(out, filepath.Join(dir, filepath.Join(parts[i:]...)))
	}
	return out
}
