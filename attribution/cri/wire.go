package cri

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mntleak/mntleak/attribution"
)

// A unary gRPC call is an HTTP/2 POST of the method's path with
// content-type application/grpc; its body and the answer's are messages
// framed by a flag byte (compressed or not) and a 4-byte big-endian
// length; the answer's status is in its trailers (grpc-status,
// grpc-message), or in its headers when it has no message
// (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md).
// net/http speaks HTTP/2 without TLS to the runtime's unix socket, so the
// daemon needs no gRPC library: grpc-go and its protobuf runtime were
// 4 MB of its binary, resident pages of every node's daemon.

// service is the CRI runtime service's gRPC name (package runtime.v1).
const service = "/runtime.v1.RuntimeService/"

// maxAnswer bounds an answer's message, as grpc-go's default receive
// limit does (a node's sandbox list is far below it).
const maxAnswer = 16 << 20

// gRPC status codes this package tells apart.
const (
	codeOK               = 0
	codeCanceled         = 1
	codeDeadlineExceeded = 4
	codeNotFound         = 5
)

// statusError is a call the runtime answered with a status other than OK.
type statusError struct {
	code    int
	message string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("rpc error: code = %d desc = %s", e.code, e.message)
}

// codeOf is the gRPC status code err carries (-1 when it carries none).
func codeOf(err error) int {
	var s *statusError
	if errors.As(err, &s) {
		return s.code
	}
	return -1
}

// transport makes unary calls on one unix socket. http.Transport dials
// when a call needs a connection and dials again after the runtime
// restarted on the same socket.
type transport struct {
	client *http.Client
}

// newTransport calls the runtime at socket.
func newTransport(socket string) *transport {
	t := &http.Transport{
		DialContext:     attribution.DialUnix(socket),
		Protocols:       new(http.Protocols),
		IdleConnTimeout: 5 * time.Minute,
	}
	t.Protocols.SetUnencryptedHTTP2(true)
	return &transport{client: &http.Client{Transport: t}}
}

// close drops the idle connections.
func (t *transport) close() { t.client.CloseIdleConnections() }

// call sends the request message req to method and returns the answer's
// message. A status other than OK is a *statusError; the context's end is
// its error.
func (t *transport) call(ctx context.Context, method string, req []byte) ([]byte, error) {
	body := make([]byte, 5+len(req))
	binary.BigEndian.PutUint32(body[1:5], uint32(len(req)))
	copy(body[5:], req)
	u := url.URL{Scheme: "http", Host: "localhost", Path: service + method}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/grpc")
	hr.Header.Set("Te", "trailers")
	if dl, ok := ctx.Deadline(); ok {
		hr.Header.Set("Grpc-Timeout", timeoutHeader(time.Until(dl)))
	}
	resp, err := t.client.Do(hr)
	if err != nil {
		return nil, contextError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	msg, err := readMessage(resp.Body)
	if err != nil {
		return nil, contextError(ctx, err)
	}
	// The trailers are there once the body is read to its end.
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer)); err != nil {
		return nil, contextError(ctx, err)
	}
	if err := statusOf(resp); err != nil {
		return nil, err
	}
	if msg == nil {
		return nil, errors.New("answer without a message")
	}
	return msg, nil
}

// readMessage reads the answer's one message; nil when it has none (a
// status without a message).
func readMessage(r io.Reader) ([]byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the answer's frame: %w", err)
	}
	if head[0] != 0 {
		return nil, fmt.Errorf("compressed answer (flag %d): none was asked for", head[0])
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n > maxAnswer {
		return nil, fmt.Errorf("answer of %d bytes, over the %d allowed", n, maxAnswer)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, fmt.Errorf("read the answer's %d bytes: %w", n, err)
	}
	return msg, nil
}

// statusOf is the call's status from the trailers (or the headers of an
// answer that has only a status): nil for OK.
func statusOf(resp *http.Response) error {
	code, msg := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if code == "" {
		code, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if code == "" {
		return errors.New("answer without a grpc-status")
	}
	c, err := strconv.Atoi(code)
	if err != nil || c < 0 {
		return fmt.Errorf("grpc-status %q: not a code", code)
	}
	if c == codeOK {
		return nil
	}
	if m, err := url.PathUnescape(msg); err == nil {
		msg = m
	}
	return &statusError{code: c, message: msg}
}

// contextError is the context's error when it ended the call, else err.
// The runtime ends a call at the deadline grpc-timeout told it (it resets
// the stream), which can come before the context's own timer fires: a
// call that failed at or past its deadline failed of it.
func contextError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}

// timeoutHeader is d as grpc-timeout says it: at most 8 digits and a
// unit, rounded up (a spent deadline is one nanosecond).
func timeoutHeader(d time.Duration) string {
	if d <= 0 {
		return "1n"
	}
	for _, u := range []struct {
		unit string
		d    time.Duration
	}{{"n", time.Nanosecond}, {"u", time.Microsecond}, {"m", time.Millisecond}, {"S", time.Second}, {"M", time.Minute}, {"H", time.Hour}} {
		if n := (d + u.d - 1) / u.d; n < 1e8 {
			return strconv.FormatInt(int64(n), 10) + u.unit
		}
	}
	return "99999999H"
}
