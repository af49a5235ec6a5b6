// Package untar unpacks a tar archive that nobody vouches for (an OCI
// artifact's layer, a checkout streamed to the plugin server) into an
// empty directory, and refuses rather than drops what it cannot place
// safely: a source must never render without one of its files.
//
// Extract writes through an os.Root. It refuses an entry whose name is
// absolute or climbs with "..", an entry below a symlink, a symlink whose
// target is absolute or leads out of the directory (directly, or through
// other symlinks at any depth of a chain), hard links, devices, pipes, a
// name given twice, and an archive over its limits of entries and bytes.
// Errors wrap ErrUnsafe, ErrTooLarge or ErrUnreadable, and name the entry.
package untar
