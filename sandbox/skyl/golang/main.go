// Command loop is the lesson's tool loop, typed in as The Tool Loop writes it, wired to the sandbox:
//
//	go build -o loop . && sandbox grade -- ./loop
//
// complete() is the lesson's own. The challenges ask for more: a report that names the calls (04),
// streaming with client.Stream and skyl.CollectStream when SANDBOX_STREAM=1 (05), the calls of a
// turn run concurrently (08). `sandbox grade N -- ./loop` grades challenge N alone.
package main

import (
	"context"
	"fmt"
	"os"

	"skyl"
)

const maxToolRounds = 5

func complete(ctx context.Context, client *skyl.Client, req *skyl.Request) (*skyl.Response, error) {
	for round := 0; round < maxToolRounds; round++ {
		resp, err := client.Complete(ctx, req)
		if err != nil {
			return nil, err
		}

		calls := resp.ToolCalls()
		if len(calls) == 0 {
			return resp, nil // the model is done
		}

		// The assistant's turn goes first, once, even for several calls.
		req.Messages = append(req.Messages, resp.Message)

		// Then one tool message per call.
		for _, call := range calls {
			req.Messages = append(req.Messages,
				skyl.ToolResultMessage(call.ID, run(call)))
		}
	}
	return nil, fmt.Errorf("gave up after %d tool rounds", maxToolRounds)
}

// sandbox is the grader's side of the contract: the model to ask, the tools and where they run.
var sandbox *skyl.Sandbox

// run executes one call through the sandbox. A failing tool is information for the model, not a
// reason to stop: its error goes back as the call's result, worded as one.
func run(call skyl.ToolCall) string {
	out, err := sandbox.Run(context.Background(), call)
	if err != nil {
		return "ERROR: " + err.Error()
	}
	return out
}

func main() {
	ctx := context.Background()
	var err error
	if sandbox, err = skyl.FromEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tools, err := sandbox.Tools(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	resp, err := complete(ctx, sandbox.Client(), sandbox.Request(tools))
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // the answer goes to stdout; everything else to stderr
		os.Exit(1)
	}
	fmt.Println(resp.Text())
}
