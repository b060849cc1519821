package attribution

import (
	"context"
	"net"
)

// DialUnix is an http.Transport's DialContext for a runtime's API on a
// unix socket: every connection goes to socket, whatever the URL's host.
func DialUnix(socket string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
}
