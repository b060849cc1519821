package state

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ActionsName is the file in the state dir where mntleak release appends a
// record of every action (one JSON line: "action", "result", ...); the
// daemon counts them in its metrics. ActionsName+".1" is the one before.
const ActionsName = "actions.jsonl"

// maxActionsBytes is where the actions file is rotated (one old file kept).
const maxActionsBytes = 1 << 20

// AppendAction appends one action record to dir's actions file. A dir that
// does not exist is not created: a node without a daemon's state dir keeps
// no record there (release still logs to stderr and the journal).
func AppendAction(dir string, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("action record: %w", err)
	}
	return appendLine(dir, ActionsName, maxActionsBytes, b)
}

// appendLine appends b and a newline to dir/name, first moving a file that
// would grow past max to name.1 (one old file kept).
func appendLine(dir, name string, max int64, b []byte) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("state dir %s: not there", dir)
	}
	path := filepath.Join(dir, name)
	if st, err := os.Stat(path); err == nil && st.Size()+int64(len(b)) > max {
		if err := os.Rename(path, path+".1"); err != nil {
			return fmt.Errorf("rotate %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	// One write of a whole line: appends from two processes never
	// interleave.
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// CountActions counts the action records in dir's actions files by action
// and result ("release", "released"). Lines that are not records are
// skipped; missing files count nothing.
func CountActions(dir string) (map[[2]string]uint64, error) {
	out := map[[2]string]uint64{}
	err := scanLines(dir, ActionsName, func(line []byte) {
		var r struct{ Action, Result string }
		if json.Unmarshal(line, &r) == nil && r.Action != "" && r.Result != "" {
			out[[2]string{r.Action, r.Result}]++
		}
	})
	return out, err
}

// scanLines calls fn with every line of dir/name.1 and then dir/name; a
// missing file has none.
func scanLines(dir, name string, fn func(line []byte)) error {
	for _, n := range []string{name + ".1", name} {
		f, err := os.Open(filepath.Join(dir, n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			fn(sc.Bytes())
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return fmt.Errorf("read %s: %w", n, err)
		}
	}
	return nil
}
