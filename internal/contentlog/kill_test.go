package contentlog_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/orion-agent/orion/internal/contentlog"
	"github.com/orion-agent/orion/internal/failpoint"
)

// killDirEnv names the directory of the log TestKillHelper writes; unset,
// that test does nothing.
const killDirEnv = "ORION_TEST_CONTENTLOG_KILL_DIR"

const killSegSize = 8192

func killRec(i int) string {
	return fmt.Sprintf("rec-%04d-%s", i, strings.Repeat(string(rune('a'+i%26)), 100+(i*37)%500))
}

// killWorkload appends records from first on, reclaiming every segment but
// the last two every fifth append, as a store whose sessions finish does,
// and says on out what it did: "ack i seg off len" once record i is
// durable, "reclaim seg" before reclaiming.
func killWorkload(l *contentlog.Log, first, n int, out func(string)) error {
	for i := first; i < first+n; i++ {
		refs, err := l.Append([][]byte{[]byte(killRec(i))}, nil)
		if err != nil {
			return err
		}
		out(fmt.Sprintf("ack %d %d %d %d", i, refs[0].Seg, refs[0].Off, refs[0].Len))
		if i%5 != 4 {
			continue
		}
		segs := l.Segments()
		for _, s := range segs[:max(0, len(segs)-2)] {
			out(fmt.Sprintf("reclaim %d", s.ID))
			if err := l.Reclaim(s.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestKillHelper is the process TestKilledWhilePreparing kills.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		t.Skip("run by TestKilledWhilePreparing")
	}
	l, err := contentlog.Open(dir, contentlog.Options{SegmentSize: killSegSize})
	if err != nil {
		t.Fatal(err)
	}
	err = killWorkload(l, 0, 2000, func(s string) { os.Stdout.WriteString(s + "\n") })
	if err != nil {
		t.Fatal(err)
	}
	// Unkilled (run by hand): how often each point was passed.
	t.Logf("%+v", l.Stats())
	l.Close()
}

// TestKilledWhilePreparing kills a process appending to a log at each point
// of preparing and recycling segments, and at the rotation into a spare:
// every record it was told is durable reads back, the reopened log reports
// no damage, and appends go on, into the spares the kill left too.
func TestKilledWhilePreparing(t *testing.T) {
	if os.Getenv(killDirEnv) != "" {
		t.Skip("inside the helper")
	}
	needSpares(t, t.TempDir())
	for _, point := range []string{
		"contentlog.prepare=1", "contentlog.prepare=4",
		"contentlog.spare=1", "contentlog.spare=3",
		"contentlog.recycle=1", "contentlog.recycle=3",
		"contentlog.rotate=3", "contentlog.rotate=6",
		"contentlog.reclaim=4",
	} {
		t.Run(point, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), killDirEnv+"="+dir, failpoint.EnvVar+"="+point)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.Output()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("helper ended with %v, not killed at %s\n%s%s", err, point, stdout, stderr.Bytes())
			}
			acked := map[contentlog.Ref]string{}
			reclaimed := map[uint64]bool{}
			last := -1
			sc := bufio.NewScanner(bytes.NewReader(stdout))
			for sc.Scan() {
				var i int
				var ref contentlog.Ref
				if n, _ := fmt.Sscanf(sc.Text(), "ack %d %d %d %d", &i, &ref.Seg, &ref.Off, &ref.Len); n == 4 {
					acked[ref] = killRec(i)
					last = i
				} else if _, err := fmt.Sscanf(sc.Text(), "reclaim %d", &ref.Seg); err == nil {
					reclaimed[ref.Seg] = true
				}
			}
			if last < 0 {
				t.Fatalf("killed before any append\n%s", stderr.Bytes())
			}
			check := func(l *contentlog.Log) {
				t.Helper()
				for ref, want := range acked {
					if reclaimed[ref.Seg] {
						continue
					}
					if got, err := l.Read(ref); err != nil || string(got) != want {
						t.Fatalf("acknowledged record at %+v: %.20q, %v", ref, got, err)
					}
				}
				err := l.Scan(contentlog.Pos{}, func(ref contentlog.Ref, p []byte, err error) error {
					if err != nil {
						return fmt.Errorf("scan at %+v: %w", ref, err)
					}
					var i int
					if _, err := fmt.Sscanf(string(p), "rec-%04d-", &i); err != nil || string(p) != killRec(i) {
						return fmt.Errorf("scan at %+v returned %.20q, never written", ref, p)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			l := open(t, dir, contentlog.Options{SegmentSize: killSegSize})
			// Open starts no preparation: one found is what the kill cut
			// short, and must be gone.
			if _, err := os.Stat(filepath.Join(dir, contentlog.PrepareName)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a half prepared spare is left after opening: %v", err)
			}
			check(l)
			// Go on past a few rotations, into whatever spare the kill
			// left, then reopen.
			err = killWorkload(l, last+1, 200, func(s string) {
				var i int
				var ref contentlog.Ref
				if n, _ := fmt.Sscanf(s, "ack %d %d %d %d", &i, &ref.Seg, &ref.Off, &ref.Len); n == 4 {
					acked[ref] = killRec(i)
				} else if _, err := fmt.Sscanf(s, "reclaim %d", &ref.Seg); err == nil {
					reclaimed[ref.Seg] = true
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			check(l)
			l.Close()
			check(open(t, dir, contentlog.Options{SegmentSize: killSegSize}))
		})
	}
}
