package kmount

import (
	"encoding/binary"
	"fmt"

	"github.com/mntleak/mntleak/event"
)

// Decode reads struct statmount, checking every length.
func Decode(b []byte) (Mount, error) {
	if len(b) < statmountHeader {
		return Mount{}, fmt.Errorf("statmount: %d bytes, want at least %d", len(b), statmountHeader)
	}
	u32 := func(off int) uint32 { return binary.NativeEndian.Uint32(b[off:]) }
	u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }
	size := int(u32(0))
	if size < statmountHeader || size > len(b) {
		return Mount{}, fmt.Errorf("statmount: size %d out of %d bytes", size, len(b))
	}
	mask := u64(8)
	if mask&(statmountSBBasic|statmountMntBasic) != statmountSBBasic|statmountMntBasic {
		return Mount{}, fmt.Errorf("statmount: mask %#x lacks the basic fields", mask)
	}
	str := func(off int, bit uint64) (string, error) {
		if mask&bit == 0 {
			return "", nil
		}
		start := statmountHeader + int(u32(off))
		if start >= size {
			return "", fmt.Errorf("statmount: string at %d beyond %d bytes", start, size)
		}
		end := start
		for end < size && b[end] != 0 {
			end++
		}
		if end == size {
			return "", fmt.Errorf("statmount: string at %d not terminated", start)
		}
		return string(b[start:end]), nil
	}
	m := Mount{
		Dev:     event.MakeDev(u32(16), u32(20)),
		SBFlags: u32(32),
		ID:      u64(40), Parent: u64(48), OldID: int(u32(56)), OldParent: int(u32(60)),
		Attr: u64(64), Prop: u64(72), Peer: u64(80), Master: u64(88),
	}
	if mask&statmountPropagateFrom != 0 {
		m.PropFrom = u64(96)
	}
	if mask&statmountMntNSID != 0 {
		m.NS = u64(112)
	}
	var err error
	for _, s := range []struct {
		to  *string
		off int
		bit uint64
	}{{&m.Opts, 4, statmountMntOpts}, {&m.FSType, 36, statmountFSType}, {&m.Root, 104, statmountMntRoot}, {&m.Point, 108, statmountMntPoint},
		{&m.Subtype, 120, statmountFSSubtype}, {&m.Source, 124, statmountSBSource}} {
		if *s.to, err = str(s.off, s.bit); err != nil {
			return Mount{}, err
		}
	}
	m.HasSource = mask&statmountSBSource != 0 // an empty string sets no bit; a source is never empty
	return m, nil
}
