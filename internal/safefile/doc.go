// Package safefile reads and writes the files lumina is handed — run
// records, metadata, counter dumps, search spaces — so that a hostile or
// careless input cannot exhaust memory, hang the command or redirect a
// write.
//
// # Reading
//
// ReadFile reads a regular file of at most a given size. Anything else is
// refused before a byte is read: a FIFO (which would block the reader until
// a writer appears, or for ever), a device such as /dev/zero (endless), a
// socket or a directory, each with ErrNotRegular; a larger file with
// ErrTooLarge. The file is opened with O_NONBLOCK, so that even a FIFO
// swapped in between the check and the open does not block: it is then
// refused by its descriptor's mode. Open is the same for streamed files
// (traces), without the size limit.
//
// NoFollow refuses a path that is itself a symbolic link (ErrSymlink):
// the files inside a result directory someone else made are read with it,
// so that a link there cannot make lumina read /etc/shadow.
//
// # Writing
//
// WriteFile replaces a file atomically: it writes a new file in the same
// directory (created exclusively, so no link is followed) and renames it
// over the target. A target that is a symbolic link is refused
// (ErrSymlink), so a planted report.html -> /tmp/victim.txt is never
// written through, even as root.
//
// # Pitfalls
//
// Errors name the path and what was wrong, never the file's contents.
// The checks are made on the descriptor that is read, except NoFollow's,
// which is made on the path just before opening it; a result directory
// changed while lumina reads it is not a case this package defends.
package safefile
