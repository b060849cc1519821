package kmount

import (
	"encoding/binary"
	"strings"
	"testing"
)

// fanEvent is one fanotify mount event as the kernel writes it.
func fanEvent(mask uint64, pid int32, mnt uint64) []byte {
	b := make([]byte, fanMetadataLen+fanInfoMntLen)
	binary.NativeEndian.PutUint32(b[0:], uint32(len(b)))
	b[4] = fanMetadataVers
	binary.NativeEndian.PutUint16(b[6:], fanMetadataLen)
	binary.NativeEndian.PutUint64(b[8:], mask)
	binary.NativeEndian.PutUint32(b[16:], ^uint32(0)) // fd -1
	binary.NativeEndian.PutUint32(b[20:], uint32(pid))
	b[24] = fanInfoTypeMnt
	binary.NativeEndian.PutUint16(b[26:], fanInfoMntLen)
	binary.NativeEndian.PutUint64(b[32:], mnt)
	return b
}

func TestDecodeEvents(t *testing.T) {
	two := append(fanEvent(fanMntDetach, 40, 0x80000123), fanEvent(fanMntAttach, 41, 0x80000124)...)
	got, err := DecodeEvents(two)
	want := []MountEvent{{Detach: true, Mount: 0x80000123, PID: 40}, {Mount: 0x80000124, PID: 41}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("DecodeEvents = %+v, %v; want %+v", got, err, want)
	}
	badVersion := fanEvent(fanMntAttach, 1, 1)
	badVersion[4] = 2
	otherMask := fanEvent(0x20, 1, 1) // FAN_OPEN
	badInfo := fanEvent(fanMntAttach, 1, 1)
	badInfo[24] = 6
	long := fanEvent(fanMntAttach, 1, 1)
	binary.NativeEndian.PutUint32(long[0:], 400)
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"short":          {two[:10], "10 bytes left"},
		"version":        {badVersion, "version 2"},
		"not a mount":    {otherMask, "no mount event"},
		"no mount info":  {badInfo, "info record type 6"},
		"beyond the end": {long, "length 400"},
	} {
		if _, err := DecodeEvents(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.want)
		}
	}
}
