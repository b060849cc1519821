package event

import (
	"encoding/binary"
	"encoding/json"
	"testing"
)

// FuzzDecode: no input makes the decoder panic, and what decodes also
// marshals and reads back.
func FuzzDecode(f *testing.F) {
	for _, k := range KernelKinds() {
		b := make([]byte, RecordSize(k))
		binary.NativeEndian.PutUint32(b[24:], uint32(k))
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Decode(b)
		if err != nil {
			return
		}
		line, err := json.Marshal(&ev)
		if err != nil {
			t.Fatalf("decoded event does not marshal: %v", err)
		}
		var back Event
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatalf("marshalled event does not read back: %v\n%s", err, line)
		}
		_ = ev.Text()
	})
}

// FuzzParseDev: device numbers from users and recorded streams.
func FuzzParseDev(f *testing.F) {
	for _, s := range []string{"7:3", "0:0", "4095:1048575", "4096:1", "a:b", ":", "", "7:3:1", "-1:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDev(s)
		if err != nil {
			return
		}
		if back, err := ParseDev(d.String()); err != nil || back != d {
			t.Fatalf("ParseDev(%q) = %v, round trip %v %v", s, d, back, err)
		}
	})
}
