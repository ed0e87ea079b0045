// Package archive builds reproducible gzip-compressed tarballs of a directory
// tree and extracts untrusted tarballs safely.
//
// Build writes the same bytes for the same tree every time: entries are
// written in lexical walk order, with a fixed modification time, owner 0:0,
// no user or group names and normalised modes, and the gzip header carries no
// name and no time. Symbolic links are only ever written as the regular file
// they point to, and only when that file lies inside the root. BuildTree
// archives any [Tree] (a file system, or a commit read from memory) with the
// same bytes as the same tree on disk.
//
// Extract treats its input as hostile: it rejects entries whose names could
// escape the destination, links, devices and other special files, and caps
// the total uncompressed size, so that a crafted artifact can neither write
// outside the destination nor exhaust the disk.
package archive
