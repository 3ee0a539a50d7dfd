//go:build unix

package kafka

import "golang.org/x/sys/unix"

// diskSpace is the total and usable (free to an unprivileged user)
// bytes of the file system holding dir, as Java's File.getTotalSpace and
// getUsableSpace report them, or −1 each if statfs fails.
func diskSpace(dir string) (total, usable int64) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return -1, -1
	}
	bs := int64(st.Bsize)
	return int64(st.Blocks) * bs, int64(st.Bavail) * bs
}
