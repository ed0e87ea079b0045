//go:build !unix

package imageupdate

// openFlags has no O_NOFOLLOW on this platform; the walk already left out
// symbolic links, and the opened file is checked to be a regular file.
const openFlags = 0
