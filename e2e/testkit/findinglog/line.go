package findinglog

import (
	"bufio"
	"encoding/json"
	"strings"

	"github.com/mntleak/mntleak/finding"
)

// Line is one line of the daemon's JSON log; for a finding, its fields.
type Line struct {
	Level           string           `json:"level"`
	Logger          string           `json:"logger"`
	Msg             string           `json:"msg"`
	Finding         string           `json:"finding"`
	FindingID       string           `json:"finding_id"`
	Headline        string           `json:"headline"`
	Cause           string           `json:"cause"`
	Syscall         string           `json:"syscall"`
	Errno           string           `json:"errno"`
	Path            string           `json:"path"`
	HolderPID       int              `json:"holder_pid"`
	HolderComm      string           `json:"holder_comm"`
	HolderRole      string           `json:"holder_role"`
	HolderMntNS     uint32           `json:"holder_mntns"`
	Container       string           `json:"container"`
	LeakEvent       string           `json:"leak_event"`
	StuckPod        string           `json:"stuck_pod"`
	StuckNamespace  string           `json:"stuck_namespace"`
	StuckPodUID     string           `json:"stuck_pod_uid"`
	StuckVolume     string           `json:"stuck_volume"`
	StuckVolumeType string           `json:"stuck_volume_type"`
	HolderPod       string           `json:"holder_pod"`
	HolderNamespace string           `json:"holder_namespace"`
	HolderContainer string           `json:"holder_container"`
	HolderImage     string           `json:"holder_image"`
	Node            string           `json:"node"`
	Enrichment      string           `json:"enrichment"`
	Detail          *finding.Finding `json:"detail"`
	// Raw is the line as logged.
	Raw string `json:"-"`
}

// IsFinding tells a finding's line: the correlator's, with its detail.
func (l *Line) IsFinding() bool { return l.Logger == "correlate" && l.Detail != nil }

// Short is the finding as a terminal shows it (finding.Block): the
// logged headline after its level ("ERROR", "WARN"), then the detail lines
// of its detail, indented; for the documents that show what mntleak
// prints. Without a headline (a log of an older daemon), the message.
func (l *Line) Short() string {
	head := l.Headline
	if head == "" || l.Detail == nil {
		return strings.ToUpper(l.Level) + " " + l.Msg
	}
	var b strings.Builder
	b.WriteString(strings.ToUpper(l.Level) + " " + head)
	for _, d := range l.Detail.Details() {
		b.WriteString("\n    " + d)
	}
	return b.String()
}

// Parse reads one log line; ok is false for what is not one (the raw
// events a pod's log interleaves have no msg).
func Parse(s string) (Line, bool) {
	var l Line
	if json.Unmarshal([]byte(s), &l) != nil || l.Msg == "" {
		return Line{}, false
	}
	l.Raw = s
	return l, true
}

// All parses every log line of lines, in order.
func All(lines []string) []Line {
	var out []Line
	for _, s := range lines {
		if l, ok := Parse(s); ok {
			out = append(out, l)
		}
	}
	return out
}

// AllOf parses every log line of text (kubectl logs, docker logs).
func AllOf(text string) []Line {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return All(lines)
}

// Findings is the finding lines of lines, in order.
func Findings(lines []string) []Line {
	var out []Line
	for _, l := range All(lines) {
		if l.IsFinding() {
			out = append(out, l)
		}
	}
	return out
}
