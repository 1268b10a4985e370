// Command unbounded is the lesson's loop without its bound: it asks the model again for as long
// as the model asks for tools. Against a runaway it never ends on its own; the sandbox's request
// budget stops it.
//
// sandbox grade fails it with the rule: "Bound the loop at about 5 rounds".
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"toolloop/skyl"
)

func complete(ctx context.Context, client *skyl.Client, tools *skyl.Sandbox, req *skyl.Request) (*skyl.Response, error) {
	for {
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

		// Then one tool message per call, in call order (the calls themselves run concurrently).
		req.Messages = append(req.Messages, runAll(ctx, tools, calls)...)
	}
}

// runAll runs the calls of one turn concurrently and returns their results in call order.
func runAll(ctx context.Context, tools *skyl.Sandbox, calls []skyl.ToolCall) []skyl.Message {
	results := make([]skyl.Message, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func(i int, call skyl.ToolCall) {
			defer wg.Done()
			results[i] = run(ctx, tools, call)
		}(i, call)
	}
	wg.Wait()
	return results
}

// run executes one call. A failing tool is information for the model, not a reason to stop:
// the failure goes back as the call's result, marked as an error.
func run(ctx context.Context, tools *skyl.Sandbox, call skyl.ToolCall) skyl.Message {
	out, err := tools.Run(ctx, call)
	if err != nil {
		return skyl.ToolErrorMessage(call.ID, "ERROR: "+err.Error())
	}
	return skyl.ToolResultMessage(call.ID, out)
}

func main() {
	ctx := context.Background()
	sandbox, err := skyl.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tools, err := sandbox.Tools(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	req := &skyl.Request{
		Model:    sandbox.Model,
		Messages: []skyl.Message{skyl.UserText(sandbox.Prompt)},
		Tools:    tools,
	}
	resp, err := complete(ctx, sandbox.Client(), sandbox, req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(resp.Text())
}
