package qemu

import (
	"fmt"
	"strings"
	"testing"
)

// parseExpect reads a scenario's NAME.expect (KEY=VALUE lines, appended by
// common.sh's expect). A later line wins (3-devicemapper expects its loop
// device, then the device-mapper device over it), except for the keys
// that name the holder: a scenario has one, so holder_pid or holder_ns
// given two values is an error, never the last one read: it is what a
// file shows when two runs of the scenario (the two hook paths of make
// lab) wrote into it, and the first path's findings would be checked
// against the second path's processes.
func parseExpect(text string) (map[string]string, error) {
	exp := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if old, seen := exp[k]; seen && old != v && (k == "holder_pid" || k == "holder_ns") {
			return nil, fmt.Errorf("%s expected as %q and as %q: two runs wrote one file", k, old, v)
		}
		exp[k] = v
	}
	return exp, nil
}

// TestExpectHolderWithTwoValues: the .expect of the 6.1 guest's
// both-path run before each pass had its own directory (both passes
// appended to /lab/out/NAME.expect) is refused; a device expected twice
// (the loop device, then the device-mapper device over it) is the last.
func TestExpectHolderWithTwoValues(t *testing.T) {
	both := "device=/dev/loop0\nunit=lab-ntpd.service\nholder_pid=849\nholder_ns=4026532266\ndevice=/dev/loop0\n" +
		"device=/dev/loop0\nunit=lab-ntpd.service\nholder_pid=1210\nholder_ns=4026532301\ndevice=/dev/loop0\n"
	if exp, err := parseExpect(both); err == nil {
		t.Errorf("two passes' expectations read as one: %v", exp)
	} else if !strings.Contains(err.Error(), "holder_pid") {
		t.Errorf("error %q does not name the key", err)
	}
	one := "device=/dev/loop1\ndevice=/dev/mapper/labdm\nunit=lab-agent.service\nholder_pid=1661\nholder_ns=4026532199\n"
	exp, err := parseExpect(one)
	if err != nil {
		t.Fatal(err)
	}
	if exp["holder_pid"] != "1661" || exp["device"] != "/dev/mapper/labdm" || len(exp) != 4 {
		t.Errorf("one pass read as %v", exp)
	}
}
