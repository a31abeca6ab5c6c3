package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/controller"
	"github.com/orion-agent/orion/internal/testdaemon"
)

// TestFlushAfterUsesTheInjectedClock: content is journaled while the model
// is still writing once FlushAfter has passed on the controller's clock,
// and not before, whatever the wall clock says.
func TestFlushAfterUsesTheInjectedClock(t *testing.T) {
	for _, tt := range []struct {
		name    string
		step    time.Duration // how far the fake clock moves per reading
		journal bool          // content journaled before the response ended
	}{
		{"ClockMoves", time.Second, true},
		{"ClockStands", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := testdaemon.Start(t)
			r := newRecorder()
			r.start()
			r.toolStart(0, "call_1", "WritePlanTool_begin")
			r.toolArgs(0, `{"intent":"x","target_file":"f.txt","operation":"create"}`)
			r.finish("tool_calls")
			r.start()
			r.content("first line\n", "second line\n")
			r.comment("check")
			r.content("{{marker}}\n")
			r.finish("stop")

			now := time.Unix(0, 0)
			var journaled int64 = -1
			opts := harnessOptions(d)
			opts.FlushAfter = 500 * time.Millisecond
			opts.ChunkBytes = 1 << 20
			opts.Now = func() time.Time { now = now.Add(tt.step); return now }
			opts.OnComment = func(ctx context.Context, _ string) {
				c, err := client.Dial(ctx, d.Socket, client.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				list, err := c.List(ctx, false)
				if err != nil || len(list) != 1 {
					t.Fatalf("sessions %+v, %v", list, err)
				}
				journaled = list[0].Bytes
			}
			ctx := context.Background()
			ctl, err := controller.New(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer ctl.Close()
			if err := ctl.Run(ctx, strings.NewReader(r.String())); err != nil {
				t.Fatal(err)
			}
			if got := journaled > 0; got != tt.journal {
				t.Fatalf("%d bytes journaled mid-response; want journaled: %v", journaled, tt.journal)
			}
		})
	}
}

// TestIdlePromptWithoutTheDaemon: when the daemon's session.idle does not
// come within IdleWait (on the injected clock), the controller gives the
// model the same prompt itself.
func TestIdlePromptWithoutTheDaemon(t *testing.T) {
	d := testdaemon.Start(t)
	r := newRecorder()
	r.start()
	r.toolStart(0, "call_1", "WritePlanTool_begin")
	r.toolArgs(0, `{"intent":"x","target_file":"idle.txt","operation":"create"}`)
	r.finish("tool_calls")
	r.start()
	r.content("no marker follows\n")
	r.finish("stop")

	var events []controller.Event
	opts := harnessOptions(d)
	opts.IdleMS = 600_000 // the daemon stays silent
	opts.After = func(time.Duration) <-chan time.Time {
		c := make(chan time.Time, 1)
		c <- time.Time{}
		return c
	}
	opts.OnEvent = func(e controller.Event) { events = append(events, e) }
	ctx := context.Background()
	ctl, err := controller.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if err := ctl.Run(ctx, strings.NewReader(r.String())); err != nil {
		t.Fatal(err)
	}
	var idle *controller.Event
	for i := range events {
		if events[i].Type == controller.EventIdle {
			idle = &events[i]
		}
	}
	if idle == nil {
		t.Fatalf("no idle event in %+v", events)
	}
	want := "If you are finished writing idle.txt, reply with " + ctl.Marker() + " on its own line; otherwise continue exactly where you stopped."
	if idle.Message.Content != want {
		t.Fatalf("prompt %q, want %q", idle.Message.Content, want)
	}
}
