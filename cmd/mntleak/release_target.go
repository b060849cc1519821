package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"

	"github.com/mntleak/mntleak/release"
	"github.com/mntleak/mntleak/state"

	"github.com/mntleak/mntleak/finding"
)

// readFinding reads the one finding r holds, in any of the forms mntleak
// writes one: the finding itself (why --json, the "detail" of a log line),
// a line of the daemon's JSON log, or an entry of journalctl -o json (its
// MNTLEAK_DETAIL field).
func readFinding(r io.Reader) (*finding.Finding, error) {
	b, err := io.ReadAll(io.LimitReader(r, 4<<20))
	if err != nil {
		return nil, err
	}
	var found []*finding.Finding
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		f, err := parseFinding(line)
		if err != nil {
			return nil, err
		}
		if f != nil {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 0:
		return nil, errors.New("no finding in it")
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%d findings in it: give one", len(found))
}

// parseFinding is the finding one JSON line holds, or nil for a log line
// that is not one.
func parseFinding(line []byte) (*finding.Finding, error) {
	var shapes struct {
		Finding finding.FindingKind `json:"finding"`
		Detail  json.RawMessage     `json:"detail"`
		Journal string              `json:"MNTLEAK_DETAIL"`
	}
	if err := json.Unmarshal(line, &shapes); err != nil {
		return nil, fmt.Errorf("not a JSON finding: %w", err)
	}
	raw := line
	switch {
	case len(shapes.Detail) > 0:
		raw = shapes.Detail
	case shapes.Journal != "":
		raw = []byte(shapes.Journal)
	case shapes.Finding == "":
		return nil, nil
	}
	var f finding.Finding
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("not a JSON finding: %w", err)
	}
	if f.Kind != finding.KindLeak && f.Kind != finding.KindFailure {
		return nil, nil
	}
	return &f, nil
}

// findingID is the form of Finding.ID.
var findingID = regexp.MustCompile(`^[0-9a-f]{12}$`)

// openFinding reads the finding in file, on stdin for "-", or, for an id
// (the finding_id of a log line, MNTLEAK_FINDING_ID of a journal entry)
// that names no file, the one the daemon kept in its state dir.
func openFinding(file, stateDir string) (*finding.Finding, error) {
	if file == "-" {
		return readFinding(os.Stdin)
	}
	fh, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) && findingID.MatchString(file) {
		if stateDir == "" {
			return nil, errors.New("a finding id is looked up in the daemon's state dir: give --state-dir")
		}
		b, err := state.LookupFinding(stateDir, file)
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, stateDir)
		}
		return readFinding(bytes.NewReader(b))
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return readFinding(fh)
}

// refuseFinding says why a finding's object is not released, from the
// finding alone: a cause release does not act on (finding.Cause.Releasable).
func refuseFinding(f *finding.Finding) (release.Refusal, bool) {
	if f.Cause.Releasable() {
		return release.Refusal{}, false
	}
	return release.Refusal{Reason: "not a leak (" + f.Cause.String() + ")", Hint: f.Fix}, true
}

// releaseCopy is the copy a finding's release command names: its primary
// holder's namespace and mount id (0 when it carries no command).
func releaseCopy(f *finding.Finding) (uint32, int) {
	if f.Release == "" || len(f.Holders) == 0 {
		return 0, 0
	}
	return f.Holders[0].MntNS, f.Holders[0].MountID
}
