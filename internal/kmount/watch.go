package kmount

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// fanotify's mount-namespace marks (Linux 6.15+): the numbers from the
// uapi header, which Debian 12's lacks.
const (
	fanReportMnt      = 0x00004000 // FAN_REPORT_MNT
	fanMarkMntNS      = 0x00000110 // FAN_MARK_MNTNS
	fanMntAttach      = 0x01000000 // FAN_MNT_ATTACH
	fanMntDetach      = 0x02000000 // FAN_MNT_DETACH
	fanInfoTypeMnt    = 7          // FAN_EVENT_INFO_TYPE_MNT
	fanMetadataLen    = 24         // sizeof(struct fanotify_event_metadata)
	fanInfoMntLen     = 16         // sizeof(struct fanotify_event_info_mnt)
	fanMetadataVers   = 3          // FANOTIFY_METADATA_VERSION
	fanEventBufferLen = 4096
	// fanEventMaxLen bounds one mount event (fanMetadataLen +
	// fanInfoMntLen, 40 bytes on 6.18), with room for info records a
	// later kernel may add.
	fanEventMaxLen = 256
)

// MountEvent is one mount attached to or detached from a watched
// namespace, by its unique id (statmount's; never reused while the machine
// runs). PID is the process that acted (a host's rmdir detaching another
// namespace's copy: not a member of that namespace).
type MountEvent struct {
	Detach bool
	Moved  bool // attached and detached in one event: moved within the namespace
	Mount  uint64
	PID    int32
}

// Watch is a fanotify group that reports mounts attached to and detached
// from the mount namespaces it marks. It keeps no namespace alive: a
// namespace's mark goes with it.
type Watch struct {
	fd  int
	buf []byte
}

// NewWatch makes the group; a kernel before 6.15 refuses it (EINVAL).
func NewWatch() (*Watch, error) {
	fd, err := unix.FanotifyInit(fanReportMnt|unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("fanotify_init(FAN_REPORT_MNT): %w", err)
	}
	return &Watch{fd: fd, buf: make([]byte, fanEventBufferLen)}, nil
}

// Add marks the mount namespace the nsfs file names (/proc/PID/ns/mnt, a
// bind of one): attaches and detaches in it are reported from now on.
func (w *Watch) Add(nsFile string) error {
	ns, err := unix.Open(nsFile, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", nsFile, err)
	}
	defer unix.Close(ns)
	if err := w.AddFD(ns); err != nil {
		return fmt.Errorf("%w of %s", err, nsFile)
	}
	return nil
}

// AddFD marks the mount namespace whose open nsfs file is ns (the caller
// keeps and closes it: the mark does not need it once made).
func (w *Watch) AddFD(ns int) error {
	// The path is NULL: the mark is on the namespace dirfd is.
	_, _, errno := unix.Syscall6(unix.SYS_FANOTIFY_MARK, uintptr(w.fd), unix.FAN_MARK_ADD|fanMarkMntNS,
		uintptr(fanMntAttach|fanMntDetach), uintptr(ns), 0, 0)
	if errno != 0 {
		return fmt.Errorf("fanotify_mark(FAN_MARK_MNTNS): %w", errno)
	}
	return nil
}

// FD is the group's descriptor, readable when events are queued (for
// epoll); Read and Close stay the Watch's.
func (w *Watch) FD() int { return w.fd }

// Read returns the events queued so far, none when there are none: it
// never blocks. The kernel queues an event before the call that caused it
// returns, so a Read after an event of that call was seen has it.
func (w *Watch) Read() ([]MountEvent, error) {
	var out []MountEvent
	for {
		n, err := unix.Read(w.fd, w.buf)
		if errors.Is(err, unix.EAGAIN) {
			return out, nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("read the fanotify group: %w", err)
		}
		evs, err := DecodeEvents(w.buf[:n])
		out = append(out, evs...)
		if err != nil {
			return out, err
		}
		if n <= len(w.buf)-fanEventMaxLen {
			// The kernel stops filling the buffer only when its queue is
			// empty or the next event does not fit: it was empty, and a
			// read to see EAGAIN would tell nothing more.
			return out, nil
		}
	}
}

// Close closes the group; its marks go with it.
func (w *Watch) Close() error { return unix.Close(w.fd) }

// DecodeEvents reads fanotify mount events, checking every length; an
// event of another kind, or without its mount record, is an error.
func DecodeEvents(b []byte) ([]MountEvent, error) {
	var out []MountEvent
	for len(b) > 0 {
		if len(b) < fanMetadataLen {
			return out, fmt.Errorf("fanotify event: %d bytes left, want at least %d", len(b), fanMetadataLen)
		}
		evLen, metaLen := int(binary.NativeEndian.Uint32(b[0:])), int(binary.NativeEndian.Uint16(b[6:]))
		if b[4] != fanMetadataVers {
			return out, fmt.Errorf("fanotify event: version %d, want %d", b[4], fanMetadataVers)
		}
		if metaLen < fanMetadataLen || evLen < metaLen+fanInfoMntLen || evLen > len(b) {
			return out, fmt.Errorf("fanotify event: length %d, metadata %d, of %d bytes", evLen, metaLen, len(b))
		}
		mask := binary.NativeEndian.Uint64(b[8:])
		ev := MountEvent{PID: int32(binary.NativeEndian.Uint32(b[20:]))}
		switch {
		case mask&fanMntDetach != 0 && mask&fanMntAttach != 0:
			ev.Moved = true
		case mask&fanMntDetach != 0:
			ev.Detach = true
		case mask&fanMntAttach == 0:
			return out, fmt.Errorf("fanotify event: mask %#x is no mount event", mask)
		}
		info := b[metaLen:evLen]
		if info[0] != fanInfoTypeMnt || int(binary.NativeEndian.Uint16(info[2:])) < fanInfoMntLen {
			return out, fmt.Errorf("fanotify event: info record type %d length %d, want a mount record", info[0], binary.NativeEndian.Uint16(info[2:]))
		}
		ev.Mount = binary.NativeEndian.Uint64(info[8:])
		out = append(out, ev)
		b = b[evLen:]
	}
	return out, nil
}
