package finding

import "testing"

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/var/lib/kubelet/pods/1f/volumes/kubernetes.io~empty-dir/cache", "/var/lib/kubelet/pods/1f/volumes/kubernetes.io~empty-dir/cache"},
		{"/srv/with space/café", "/srv/with space/café"},
		{"ev il\n{\"level\":\"error\",\"msg\":\"FAKE\"}\x1b[31m", `ev il\n{"level":"error","msg":"FAKE"}\x1b[31m`},
		{"hold\nFAKE", `hold\nFAKE`},
		{"tab\there", `tab\there`},
		{`C:\path`, `C:\\path`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"bidi\u202eevil", `bidi\u202eevil`},
		{"del\x7f", `del\x7f`},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
