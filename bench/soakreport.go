package bench

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Text is the soak's figures and verdict for a terminal.
func (s *SoakResult) Text() string {
	var b strings.Builder
	ok, why := s.Pass()
	fmt.Fprintf(&b, "soak: %s, %d cycles, %s storm syscalls, %d containers run and removed, %d failures injected\n",
		s.Elapsed.Round(time.Second), s.Cycles, thousands(s.StormSyscalls), s.Containers, s.Injected)
	fmt.Fprintf(&b, "  events lost      %.0f\n", s.Lost)
	fmt.Fprintf(&b, "  explained        %d of %d injected failures (within %s)\n", s.Explained, s.Injected, s.Config.ExplainWithin)
	fmt.Fprintf(&b, "  other findings   %d about the soak's work, %d about the rest of the machine\n", len(s.Unexpected), s.Elsewhere)
	fmt.Fprintf(&b, "  daemon RSS       %s after warm-up → %s at the end (flat: %v)\n", mib(s.RSSStart), mib(s.RSSEnd), s.RSSFlat())
	fmt.Fprintf(&b, "  daemon CPU       %s of one core\n", pct(s.CPU))
	fmt.Fprintf(&b, "  leftover mounts  %d\n", len(s.LeftoverMounts))
	if ok {
		b.WriteString("soak: PASS\n")
	} else {
		b.WriteString("soak: FAIL: " + strings.Join(why, "; ") + "\n")
	}
	return b.String()
}

// Markdown is the "## Soak" section of docs/BENCHMARKS.md.
func (s *SoakResult) Markdown(m Machine, commandLine string) string {
	var b strings.Builder
	ok, why := s.Pass()
	verdict := "PASS"
	if !ok {
		verdict = "FAIL: " + strings.Join(why, "; ")
	}
	fmt.Fprintf(&b, "## Soak\n\n")
	fmt.Fprintf(&b, "One daemon for %s under repeating cycles of a %s mount storm (%d threads, in a private namespace), "+
		"%d `docker run`/`rm` on the soak's own Docker Engine, and %d injected failures (umount2 → EINVAL of a tmpfs "+
		"mounted only in a holder namespace, each of which must be explained, naming the holder, within %s). "+
		"RSS is sampled every %s; \"flat\" means the median of the last quarter of the samples is within 15%% + 4 MiB "+
		"of the median of the second quarter (the first is warm-up).\n\n",
		s.Elapsed.Round(time.Second), s.Config.StormTime, s.Config.StormThreads, s.Config.Containers, s.Config.Failures,
		s.Config.ExplainWithin, s.Config.SampleEvery)
	fmt.Fprintf(&b, "Machine: %s\n\nCommand: `%s`\n\n", m.Line(), commandLine)
	b.WriteString("| check | figure |\n|---|---|\n")
	fmt.Fprintf(&b, "| cycles | %d (%s storm syscalls, %d containers) |\n", s.Cycles, thousands(s.StormSyscalls), s.Containers)
	fmt.Fprintf(&b, "| events lost | %.0f |\n", s.Lost)
	fmt.Fprintf(&b, "| injected failures explained | %d of %d |\n", s.Explained, s.Injected)
	fmt.Fprintf(&b, "| findings about the soak's work it did not inject | %d |\n", len(s.Unexpected))
	fmt.Fprintf(&b, "| daemon RSS, after warm-up → end | %s → %s |\n", mib(s.RSSStart), mib(s.RSSEnd))
	fmt.Fprintf(&b, "| daemon CPU | %s of one core |\n", pct(s.CPU))
	fmt.Fprintf(&b, "| mounts left behind | %d |\n", len(s.LeftoverMounts))
	fmt.Fprintf(&b, "| verdict | %s |\n\n", verdict)
	b.WriteString("RSS samples (MiB): ")
	for i, p := range s.Samples {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.1f", float64(p.RSS)/(1<<20))
	}
	b.WriteString("\n")
	return b.String()
}

// WriteSoakSection replaces the "## Soak" section (to the end of the file)
// of the Markdown file at path with section.
func WriteSoakSection(path, section string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(b)
	if i := strings.Index(doc, "\n## Soak"); i >= 0 {
		doc = doc[:i+1]
	} else if !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	return os.WriteFile(path, []byte(doc+"\n"+strings.TrimLeft(section, "\n")), 0o644)
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
