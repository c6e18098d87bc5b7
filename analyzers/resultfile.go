package analyzers

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/netlumina/lumina/internal/safefile"
)

// checkResultFile checks that path, a file of a result directory (a
// lumina run's or a public Lumina repeat's), is a regular file and not a
// symbolic link: a result directory may come from someone else, and a
// link in it (pcap-result/trace.pcap -> /etc/shadow) must not make lumina
// read, or quote, a file outside it.
func checkResultFile(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch m := st.Mode(); {
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%s: %w (lumina analyze reads no links in a result directory; copy the file in)", path, safefile.ErrSymlink)
	case !m.IsRegular():
		return fmt.Errorf("%s: %w", path, safefile.ErrNotRegular)
	}
	return nil
}
