package turnmark_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/orion-agent/orion/client"
	"github.com/orion-agent/orion/client/turnmark"
	"github.com/orion-agent/orion/internal/testdaemon"
	"github.com/orion-agent/orion/protocol"
)

func TestMain(m *testing.M) { testdaemon.Main(m) }

// Tool calls arriving at once, with no turn open, begin one turn between
// them, not one each; it ends after the quiet period.
func TestCallsAtOnceBeginOneTurn(t *testing.T) {
	d := testdaemon.Start(t)
	m := turnmark.New(turnmark.Config{
		Dial:  func(ctx context.Context) (*client.Client, error) { return client.Dial(ctx, d.Socket, client.Options{}) },
		Agent: "host",
		Idle:  300 * time.Millisecond,
	})
	defer m.Close()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); m.Call(context.Background(), d.Root, "") }()
	}
	wg.Wait()
	c, err := client.Dial(context.Background(), d.Socket, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var turns []protocol.TurnInfo
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res, err := c.TurnList(context.Background(), protocol.TurnListParams{WorkspaceRoot: d.Root})
		if err != nil {
			t.Fatal(err)
		}
		if turns = res.Turns; len(turns) > 0 && turns[0].State == protocol.TurnEnded {
			break
		}
	}
	if len(turns) != 1 || turns[0].State != protocol.TurnEnded || turns[0].Agent != "host" {
		t.Fatalf("turns %+v, want one ended turn of host", turns)
	}
}
