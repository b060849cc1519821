package journald

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
	"golang.org/x/sys/unix"
)

// DefaultSendTimeout bounds one send: a journald that stopped reading (its
// socket queue full) costs that long per entry, not for ever.
const DefaultSendTimeout = 250 * time.Millisecond

// Socket sends entries to a journald socket with the native protocol. It
// replaces journal.Send for two reasons: the path is a parameter (a
// journal namespace listens at /run/systemd/journal.NAME/socket), and every
// send has a deadline, where journal.Send blocks while journald is stopped.
// The socket is unconnected and sends by path, so a journald restarted at
// the same path is reached again without reconnecting.
type Socket struct {
	path    string
	timeout time.Duration

	mu   sync.Mutex
	conn *net.UnixConn
}

// NewSocket returns a sender to the socket at path ("" for SocketPath).
func NewSocket(path string, timeout time.Duration) *Socket {
	if path == "" {
		path = SocketPath
	}
	if timeout <= 0 {
		timeout = DefaultSendTimeout
	}
	return &Socket{path: path, timeout: timeout}
}

// Path is the socket's path.
func (s *Socket) Path() string { return s.path }

// Available reports whether a journald listens at the path.
func (s *Socket) Available() bool {
	c, err := net.Dial("unixgram", s.path)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Send implements Sender.
func (s *Socket) Send(message string, priority journal.Priority, vars map[string]string) error {
	var data bytes.Buffer
	appendField(&data, "PRIORITY", strconv.Itoa(int(priority)))
	appendField(&data, "MESSAGE", message)
	for k, v := range vars {
		appendField(&data, k, v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram"}) // autobind
		if err != nil {
			return fmt.Errorf("journal socket: %w", err)
		}
		s.conn = c
	}
	addr := &net.UnixAddr{Name: s.path, Net: "unixgram"}
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.timeout))
	_, _, err := s.conn.WriteMsgUnix(data.Bytes(), nil, addr)
	if err == nil || !(errors.Is(err, syscall.EMSGSIZE) || errors.Is(err, syscall.ENOBUFS)) {
		if err != nil {
			err = fmt.Errorf("send to journal %s: %w", s.path, err)
		}
		return err
	}
	// Over the datagram limit (a finding's detail can be): pass a sealed
	// memfd, as sd_journal_send does.
	fd, err := unix.MemfdCreate("mntleak-journal", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("send to journal %s: memfd: %w", s.path, err)
	}
	f := os.NewFile(uintptr(fd), "mntleak-journal")
	defer f.Close()
	if _, err := f.Write(data.Bytes()); err != nil {
		return fmt.Errorf("send to journal %s: memfd: %w", s.path, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return fmt.Errorf("send to journal %s: seal memfd: %w", s.path, err)
	}
	if _, _, err := s.conn.WriteMsgUnix(nil, unix.UnixRights(fd), addr); err != nil {
		return fmt.Errorf("send to journal %s: %w", s.path, err)
	}
	return nil
}

// Close closes the sending socket.
func (s *Socket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}

// appendField writes one field of the native protocol: NAME=value, or for a
// value with a newline NAME, its length as 64-bit little endian, the value.
func appendField(b *bytes.Buffer, name, value string) {
	if !strings.ContainsRune(value, '\n') {
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(value)
		b.WriteByte('\n')
		return
	}
	b.WriteString(name)
	b.WriteByte('\n')
	_ = binary.Write(b, binary.LittleEndian, uint64(len(value)))
	b.WriteString(value)
	b.WriteByte('\n')
}
