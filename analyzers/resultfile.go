package analyzers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/netlumina/lumina/internal/safefile"
)

// checkResultFile checks that path, a file of a result directory (a
// lumina run's or a public Lumina repeat's), is a regular file and not a
// symbolic link (nor a FIFO or a device: safefile.Open): a result directory may come from someone else, and a
// link in it (pcap-result/trace.pcap -> /etc/shadow) must not make lumina
// read, or quote, a file outside it.
func checkResultFile(path string) error {
	f, err := safefile.Open(path, safefile.NoFollow)
	if errors.Is(err, safefile.ErrSymlink) {
		return fmt.Errorf("%s: %w (lumina analyze reads no links in a result directory; copy the file in)", path, safefile.ErrSymlink)
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// checkResultSubdir checks that the subdirectory path of a result
// directory (a public repeat's pcap-result/ or rdma-result/) is not a
// symbolic link, whose files checkResultFile would otherwise take for the
// directory's own. A missing one is no error.
func checkResultSubdir(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: %w (lumina analyze reads no links in a result directory)", path, safefile.ErrSymlink)
	}
	return nil
}
