package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
)

// heldAnswer is what release reads of `mntleak why pod --json`.
type heldAnswer struct {
	Held []struct {
		Object struct {
			Text string `json:"text"`
		} `json:"object"`
		Finding struct {
			Release string `json:"release"`
			Summary string `json:"summary"`
		} `json:"finding"`
	} `json:"held"`
}

// releaseReport is release's answer with --format json: one document, as
// `mntleak why pod --json` is one.
type releaseReport struct {
	Pod     string           `json:"pod,omitempty"` // namespace/name; "" when asked by --pod-uid alone
	UID     string           `json:"uid"`
	Node    string           `json:"node"`
	Applied bool             `json:"applied"` // --apply: the releases acted (else they planned)
	Objects []releasedObject `json:"objects"` // the held objects; none when nothing holds the pod's mounts
}

// releasedObject is one held object and what release did with it.
type releasedObject struct {
	Object string `json:"object"`
	// Release is the command the object's finding carries, "" when
	// release cannot detach what holds it (Summary says what does).
	Release string `json:"release,omitempty"`
	Summary string `json:"summary,omitempty"`
	// Exit is the node's release's exit code (0 planned or released, 1
	// refused or failed); 1 for an object release cannot detach.
	Exit int `json:"exit"`
	// Records are the release's action records, as it logs them.
	Records []json.RawMessage `json:"records"`
}

// splitRecords splits what `mntleak release` wrote on stderr: its action
// records (a JSON line each, "action":"release", which it also keeps in
// the node's journal and the daemon's state dir) and the rest (its error
// and warning lines).
func splitRecords(stderr string) (records []json.RawMessage, rest string) {
	var other strings.Builder
	for _, l := range strings.SplitAfter(stderr, "\n") {
		var r struct {
			Action string `json:"action"`
		}
		if t := strings.TrimSpace(l); json.Unmarshal([]byte(t), &r) == nil && r.Action == "release" {
			records = append(records, json.RawMessage(t))
			continue
		}
		other.WriteString(l)
	}
	return records, other.String()
}

// runRelease is `kubectl mntleak release`: for each held object whose
// finding carries a release command, that command in the mntleak pod.
// Its output follows `mntleak release`'s and `mntleak why pod`'s rule:
// people read the human lines (stdout: each object with its command, then
// the release's plan or result), programs read --format json (one
// document: each object with the release's action records); never both.
// The action records `mntleak release` writes on stderr are left out of
// the human form: the node keeps them (its journal, MNTLEAK_ACTION=release,
// and the daemon's state dir). The release's other stderr lines (errors,
// warnings) go to stderr in both forms.
func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer, fake *backend) int {
	var f targetFlags
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	f.register(fs)
	apply := fs.Bool("apply", false, "act: detach each leaked copy (default: print the plan)")
	var out outputFormat
	out.register(fs, "stdout: human (each object, its release command and the release's plan or result) or json (one document: each object and the release's action records)")
	pos, code, done := parse(fs, args, stderr)
	if done {
		return code
	}
	asJSON, err := out.asJSON()
	if err != nil {
		return fail(stderr, "release", exitUsage, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	t, code, err := f.resolve(ctx, "release", pos, fake)
	if err != nil {
		return fail(stderr, "release", code, err)
	}
	var whyOut, whyErr strings.Builder
	code, err = t.runner.run(ctx, t.daemon, t.whyPodCommand("--json"), &whyOut, &whyErr)
	if err != nil {
		return fail(stderr, "release", exitCluster, err)
	}
	var ans heldAnswer
	if jerr := json.Unmarshal([]byte(whyOut.String()), &ans); jerr != nil || code > 1 {
		fmt.Fprint(stderr, whyErr.String())
		return fail(stderr, "release", exitCluster, fmt.Errorf("mntleak why pod on %s/%s: exit %d, %d bytes not an answer: %v", t.daemon.Namespace, t.daemon.Name, code, whyOut.Len(), jerr))
	}
	report := releaseReport{UID: t.uid, Node: t.node, Applied: *apply, Objects: []releasedObject{}}
	if t.ref.Name != "" {
		report.Pod = t.ref.String()
	}
	worst := exitOK
	for _, h := range ans.Held {
		o := releasedObject{Object: h.Object.Text, Release: h.Finding.Release, Records: []json.RawMessage{}}
		if o.Release == "" {
			o.Summary, o.Exit = h.Finding.Summary, 1
			if !asJSON {
				fmt.Fprintf(stdout, "%s: no copy release can detach: %s\n", o.Object, o.Summary)
			}
		} else {
			if !asJSON {
				fmt.Fprintf(stdout, "%s: %s\n", o.Object, o.Release)
			}
			if o, err = t.release(ctx, o, *apply, asJSON, stdout, stderr); err != nil {
				return fail(stderr, "release", exitCluster, err)
			}
		}
		worst = max(worst, o.Exit)
		report.Objects = append(report.Objects, o)
	}
	if asJSON {
		b, _ := json.Marshal(report)
		fmt.Fprintln(stdout, string(b))
	} else if len(ans.Held) == 0 {
		name := report.Pod
		if name == "" {
			name = "uid " + t.uid
		}
		fmt.Fprintf(stdout, "nothing holds pod %s's mounts: nothing to release\n", name)
	}
	return worst
}

// release runs o's release command in the mntleak pod: its human lines go
// to stdout unless asJSON, its action records into o, its other stderr
// lines to stderr.
func (t target) release(ctx context.Context, o releasedObject, apply, asJSON bool, stdout, stderr io.Writer) (releasedObject, error) {
	cmd := strings.Fields(o.Release)
	cmd[0] = daemonBinary
	cmd = append(cmd, releaseFlags(t.daemon)...)
	if apply {
		cmd = append(cmd, "--apply")
	}
	var human io.Writer = stdout
	if asJSON {
		human = io.Discard
	}
	var errOut bytes.Buffer
	code, err := t.runner.run(ctx, t.daemon, cmd, human, &errOut)
	records, rest := splitRecords(errOut.String())
	fmt.Fprint(stderr, rest)
	if err != nil {
		return o, err
	}
	o.Exit = code
	o.Records = append(o.Records, records...)
	return o, nil
}
