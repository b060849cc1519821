package daemon

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/state"
)

// lineageStore is the persistent lineage of a running daemon. A write
// that fails disables it, said once; tracing goes on.
type lineageStore struct {
	dir    string
	l      *state.Log
	log    *zap.Logger
	broken atomic.Bool
}

// openLineage feeds the correlator what an earlier run saw in dir and
// opens dir for this run's events, flushed once a second until ctx is
// done. It returns nil, after one error line, when dir cannot be used.
func openLineage(ctx context.Context, dir string, maxBytes int64, corr *correlate.Correlator, log *zap.Logger) *lineageStore {
	disabled := func(err error) *lineageStore {
		log.Error("persistent lineage disabled: the state dir cannot be used; tracing without it",
			zap.String(logkey.Path, dir), zap.Error(err))
		return nil
	}
	boot, err := state.BootID()
	if err != nil {
		return disabled(err)
	}
	loaded, err := state.Read(dir, boot)
	if err != nil {
		return disabled(err)
	}
	for _, d := range loaded.Damaged {
		log.Warn("persistent lineage: skipped damaged data", zap.String(logkey.Path, d.Path), zap.String(logkey.Reason, d.Reason))
	}
	if loaded.OtherBoot > 0 {
		// Expected after a reboot; trimmed as the log grows.
		log.Info("persistent lineage: segments of an earlier boot ignored", zap.String(logkey.Path, dir), zap.Int(logkey.Segments, loaded.OtherBoot))
	}
	l, err := state.Open(dir, boot, maxBytes)
	if err != nil {
		return disabled(err)
	}
	for _, ev := range loaded.Events {
		corr.Remember(ev)
	}
	s := &lineageStore{dir: dir, l: l, log: log}
	// The exit of a FUSE server is kept too: the engine hands it back as
	// it reads it (append, pipeline.go).
	corr.FUSEServerExits(func(ev *event.Event) { s.append(ev, true) })
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if !s.broken.Load() {
					s.fail(l.Flush())
				}
			}
		}
	}()
	log.Info("persistent lineage", zap.String(logkey.Path, dir), zap.Int(logkey.Remembered, len(loaded.Events)))
	return s
}

func (s *lineageStore) fail(err error) {
	if err != nil && s.broken.CompareAndSwap(false, true) {
		s.log.Error("persistent lineage disabled: write failed; tracing without it", zap.String(logkey.Path, s.dir), zap.Error(err))
	}
}

func (s *lineageStore) close() {
	if s == nil {
		return
	}
	if err := s.l.Close(); err != nil && !s.broken.Load() {
		s.log.Warn("persistent lineage: close failed", zap.String(logkey.Path, s.dir), zap.Error(err))
	}
}
