package event

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// encodingJSON is the event as the stream wrote it before AppendJSON: a
// json.Encoder with HTML escaping off, without its newline; ok false
// when it refuses the event.
func encodingJSON(t testing.TB, ev *Event) ([]byte, bool) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, false
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), true
}

// TestAppendJSONIsEncodingJSON: 100,000 seeded events, every field set or
// zero at random, strings with quotes, control characters, HTML's
// characters, invalid UTF-8 and U+2028, times in odd zones and years out
// of JSON's range, kinds out of range: AppendJSON writes the bytes
// encoding/json writes, and refuses what it refuses.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	refused := 0
	for i := 0; i < 100_000; i++ {
		ev := randomEvent(rng)
		want, wantOK := encodingJSON(t, ev)
		prefix := []byte("prefix")
		got, ok := ev.AppendJSON(prefix)
		if ok != wantOK {
			t.Fatalf("event %d (%+v): AppendJSON ok %v, encoding/json ok %v", i, ev, ok, wantOK)
		}
		if !ok {
			refused++
			if string(got) != "prefix" {
				t.Fatalf("event %d: refused, but appended %q", i, got[len("prefix"):])
			}
			continue
		}
		if !bytes.Equal(got[len("prefix"):], want) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got[len("prefix"):], want)
		}
	}
	if refused == 0 || refused > 70_000 {
		t.Errorf("%d of 100,000 events refused: want some (the refusals are checked too), and 30,000 compared", refused)
	}
}

// TestAppendJSONCoversEveryField: an event with every field set to a
// non-zero value writes every field (a field added to Event and not to
// AppendJSON fails here, the random test may set it rarely).
func TestAppendJSONCoversEveryField(t *testing.T) {
	ev := &Event{Kind: KindFailure, Time: time.Unix(1700000000, 5), LostSince: time.Unix(1700000000, 6),
		Truncated: []string{"path"}, Payload: []byte{1}, Teardown: &Teardown{Op: "o", Device: "d", Dev: 1}}
	v := reflect.ValueOf(ev).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int32, reflect.Int64:
			f.SetInt(-3)
		case reflect.Uint32, reflect.Uint64:
			f.SetUint(7)
		}
	}
	want, _ := encodingJSON(t, ev)
	got, ok := ev.AppendJSON(nil)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("every field set:\n got %s (ok %v)\nwant %s", got, ok, want)
	}
}

// FuzzAppendJSONString: any string is quoted as encoding/json quotes it.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b\c`, "\x00\x01\b\f\n\r\t\x1f\x7f", "<>&", "\u2028\u2029", "\xff\xfe", "é\xc3", "\U0001F600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := encodingJSON(t, &Event{Kind: KindMount, Comm: s})
		got, _ := (&Event{Kind: KindMount, Comm: s}).AppendJSON(nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}

var oddZones = []*time.Location{
	time.UTC, time.Local, time.FixedZone("plus", 5*3600+30*60), time.FixedZone("minus", -(3*3600 + 45*60)),
	time.FixedZone("seconds", 3600+17), time.FixedZone("edge", 23*3600+59*60), time.FixedZone("too far", 24*3600),
	time.FixedZone("too far west", -(25 * 3600)),
}

func randomTime(rng *rand.Rand) time.Time {
	switch rng.IntN(12) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(10000+rng.IntN(3), 1, 1, 0, 0, 0, 0, time.UTC) // past 9999
	case 2:
		return time.Date(-1-rng.IntN(3), 1, 1, 0, 0, 0, 0, time.UTC) // before year 0
	case 3:
		return time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	}
	t := time.Unix(rng.Int64N(4_000_000_000), rng.Int64N(1_000_000_000))
	if rng.IntN(4) == 0 {
		t = t.Truncate(time.Duration(1+rng.IntN(3)) * time.Millisecond)
	}
	return t.In(oddZones[rng.IntN(len(oddZones))])
}

var stringParts = []string{"", "/var/lib/kubelet/pods/x/volumes", "a", `"`, `\`, "\n", "\t", "\x00", "\x1b", "\x7f", "<script>", "&amp;",
	"\u2028", "\u2029", "é", "\xff", "\xe2\x80", "\U0001F600", " ", "tmpfs", "rw,nosuid"}

func randomString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return ""
	}
	var b []byte
	for n := rng.IntN(5); n >= 0; n-- {
		b = append(b, stringParts[rng.IntN(len(stringParts))]...)
	}
	return string(b)
}

func randomInt(rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return math.MinInt64 + rng.Int64N(3)
	case 2:
		return math.MaxInt64 - rng.Int64N(3)
	}
	return rng.Int64N(2000) - 1000
}

// randomEvent sets every field of an Event, each zero a third of the time.
func randomEvent(rng *rand.Rand) *Event {
	ev := &Event{Kind: Kind(rng.IntN(int(kindMax) + 2)), Time: randomTime(rng)}
	if rng.IntN(3) == 0 {
		ev.LostSince = randomTime(rng)
	}
	if rng.IntN(3) == 0 {
		for n := rng.IntN(3); n >= 0; n-- {
			ev.Truncated = append(ev.Truncated, randomString(rng))
		}
	} else if rng.IntN(2) == 0 {
		ev.Truncated = []string{}
	}
	if rng.IntN(3) == 0 {
		ev.Payload = make([]byte, rng.IntN(40))
		for i := range ev.Payload {
			ev.Payload[i] = byte(rng.Uint32())
		}
	}
	if rng.IntN(3) == 0 {
		ev.Teardown = &Teardown{Op: randomString(rng), Device: randomString(rng), Dev: Dev(rng.Uint32())}
	}
	v := reflect.ValueOf(ev).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if rng.IntN(3) == 0 || !f.CanSet() {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(randomString(rng))
		case reflect.Int32:
			f.SetInt(int64(int32(randomInt(rng))))
		case reflect.Int64:
			f.SetInt(randomInt(rng))
		case reflect.Uint32:
			if f.Type() != reflect.TypeOf(Kind(0)) {
				f.SetUint(uint64(uint32(randomInt(rng))))
			}
		case reflect.Uint64:
			f.SetUint(uint64(randomInt(rng)))
		}
	}
	return ev
}
