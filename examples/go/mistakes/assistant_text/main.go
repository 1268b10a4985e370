// Command assistant_text makes the lesson's ordering mistake: it appends a reconstruction of the
// assistant's turn, skyl.AssistantText(resp.Text()), instead of resp.Message. The prose survives,
// the tool calls do not, so the results appended next answer nothing and the provider says 400.
//
// sandbox grade fails it with the rule: "Append resp.message before any tool result".
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"toolloop/skyl"
)

const maxToolRounds = 5

func complete(ctx context.Context, client *skyl.Client, tools *skyl.Sandbox, req *skyl.Request) (*skyl.Response, error) {
	var history []string
	for round := 0; round < maxToolRounds; round++ {
		resp, err := client.Complete(ctx, req)
		if err != nil {
			return nil, err
		}

		calls := resp.ToolCalls()
		if len(calls) == 0 {
			return resp, nil // the model is done
		}

		// DON'T: AssistantText keeps the prose and silently drops the tool calls,
		// so the result you append next has nothing to answer.
		req.Messages = append(req.Messages, skyl.AssistantText(resp.Text()))

		// Then one tool message per call, in call order (the calls themselves run concurrently).
		for i, result := range runAll(ctx, tools, calls) {
			history = append(history, calls[i].Name)
			req.Messages = append(req.Messages, result)
		}
	}
	return nil, fmt.Errorf("gave up after %d tool rounds; call sequence was %v — "+
		"check what these tools return", maxToolRounds, history)
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
