// The lesson's tool loop in JavaScript, as a program `sandbox grade` can judge:
//
//     sandbox grade --wire openai,anthropic -- node examples/js/loop.mjs
//
// Node 18 or newer, no packages: node:http does the HTTP, over one kept-alive agent. (The built-in
// fetch works too, but loading and warming it up costs Node 0.1-0.3 s in every run, and the grader
// runs the program once per case: on a busy machine a case took 1.58 s with fetch and 0.61 s with
// node:http, Node's own start being 0.47 s; `python bench/programs.py` measures it.) It speaks
// OpenAI Chat Completions and Anthropic Messages, streaming or not, as SANDBOX_WIRE and
// SANDBOX_STREAM say: graded on all four formats, it is told to grade with `--wire openai,anthropic`.
// The answer goes to stdout; at the bound the report goes to stderr and the exit status is 1.

import http from "node:http";

const MAX_TOOL_ROUNDS = 5;

const env = process.env;
const sandbox = env.SANDBOX_BASE_URL;
const stream = env.SANDBOX_STREAM === "1";
const agent = new http.Agent({ keepAlive: true });

// request sends one HTTP request; resolves with the status and the whole body as text.
function request(url, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (resp) => {
      const chunks = [];
      resp.on("data", (chunk) => chunks.push(chunk));
      resp.on("end", () => resolve({ status: resp.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
      resp.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

// -- the loop ------------------------------------------------------------------------------------

async function complete(client, req) {
  const history = [];
  for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
    const resp = await client.complete(req);

    const calls = resp.toolCalls;
    if (calls.length === 0) {
      return resp; // the model is done
    }

    // The assistant's turn goes first, once, even for several calls.
    req.messages.push(resp.message);

    // Then one tool message per call, in call order (the calls themselves run concurrently).
    const results = await Promise.all(calls.map(run));
    for (const [i, result] of results.entries()) {
      history.push(calls[i].name);
      req.messages.push(result);
    }
  }
  throw new Error(
    `gave up after ${MAX_TOOL_ROUNDS} tool rounds; call sequence was [${history.join(" ")}] — ` +
      "check what these tools return",
  );
}

// run executes one call through the sandbox. A failing tool is information for the model, not a
// reason to stop: the failure goes back as the call's result, marked as an error.
async function run(call) {
  const resp = await request(`${sandbox}/tools/run`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: call.name, arguments: call.arguments }),
  });
  const ran = JSON.parse(resp.text);
  if (ran.output === undefined) {
    return toolResultMessage(call.id, `ERROR: ${call.name}: ${ran.error}`, true);
  }
  return toolResultMessage(call.id, ran.output);
}

// -- the conversation, in a form every provider can be given ----------------------------------------

const userText = (text) => ({ role: "user", text });
const toolResultMessage = (callId, output, isError = false) => ({ role: "tool", callId, text: output, isError });

function response(text, calls, stopReason) {
  const message = { role: "assistant", text, calls };
  return { message, toolCalls: calls, text, stopReason };
}

// -- the wire formats ------------------------------------------------------------------------------

const openai = {
  url: () => `${env.OPENAI_BASE_URL}/chat/completions`,
  headers: () => ({ authorization: `Bearer ${env.OPENAI_API_KEY}` }),
  body(req) {
    const messages = req.messages.map((m) => {
      if (m.role === "tool") return { role: "tool", tool_call_id: m.callId, content: m.text };
      if (m.role === "assistant" && m.calls.length > 0) {
        return {
          role: "assistant",
          content: m.text || null,
          tool_calls: m.calls.map((c) => ({
            id: c.id,
            type: "function",
            function: { name: c.name, arguments: JSON.stringify(c.arguments) },
          })),
        };
      }
      return { role: m.role, content: m.text };
    });
    const body = { model: req.model, messages, stream };
    if (req.tools.length > 0) body.tools = req.tools.map((tool) => ({ type: "function", function: tool }));
    return body;
  },
  decode(data) {
    const { message, finish_reason } = data.choices[0];
    const calls = (message.tool_calls ?? []).map((c) => ({
      id: c.id,
      name: c.function.name,
      arguments: JSON.parse(c.function.arguments || "{}"),
    }));
    return response(message.content ?? "", calls, finish_reason);
  },
  // A stream's chunks carry text deltas, and each call's fragments under its index.
  assemble(events) {
    let text = "";
    let stop = null;
    const calls = [];
    for (const event of events) {
      if (event.error) throw new Error(`openai stream error: ${event.error.message}`);
      for (const choice of event.choices) {
        text += choice.delta.content ?? "";
        for (const part of choice.delta.tool_calls ?? []) {
          calls[part.index] ??= { id: "", name: "", json: "" };
          const call = calls[part.index];
          call.id ||= part.id ?? "";
          call.name += part.function?.name ?? "";
          call.json += part.function?.arguments ?? "";
        }
        stop = choice.finish_reason ?? stop;
      }
    }
    const parsed = calls.map((c) => ({ id: c.id, name: c.name, arguments: JSON.parse(c.json || "{}") }));
    return response(text, parsed, stop);
  },
};

const anthropic = {
  url: () => `${env.ANTHROPIC_BASE_URL}/v1/messages`,
  headers: () => ({ "x-api-key": env.ANTHROPIC_API_KEY, "anthropic-version": "2023-06-01" }),
  body(req) {
    const messages = [];
    for (const m of req.messages) {
      if (m.role === "tool") {
        // Every result of a turn goes in one user message, right after that turn.
        const block = { type: "tool_result", tool_use_id: m.callId, content: m.text, is_error: m.isError };
        const last = messages.at(-1);
        if (last?.role === "user" && last.content[0].type === "tool_result") last.content.push(block);
        else messages.push({ role: "user", content: [block] });
      } else if (m.role === "assistant") {
        const content = m.text ? [{ type: "text", text: m.text }] : [];
        for (const c of m.calls) content.push({ type: "tool_use", id: c.id, name: c.name, input: c.arguments });
        messages.push({ role: "assistant", content });
      } else {
        messages.push({ role: m.role, content: m.text });
      }
    }
    const body = { model: req.model, max_tokens: 1024, messages, stream };
    if (req.tools.length > 0) {
      body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
    }
    return body;
  },
  decode(data) {
    return fromBlocks(data.content, data.stop_reason);
  },
  // A stream's content blocks start, grow by deltas (tool input as JSON fragments) and stop.
  assemble(events) {
    const blocks = [];
    let stop = null;
    for (const event of events) {
      if (event.type === "error") throw new Error(`anthropic stream error: ${event.error.message}`);
      if (event.type === "content_block_start") blocks[event.index] = { ...event.content_block, json: "" };
      if (event.type === "content_block_delta") {
        const block = blocks[event.index];
        if (event.delta.type === "text_delta") block.text += event.delta.text;
        if (event.delta.type === "input_json_delta") block.json += event.delta.partial_json;
      }
      if (event.type === "content_block_stop" && blocks[event.index].type === "tool_use") {
        blocks[event.index].input = JSON.parse(blocks[event.index].json || "{}");
      }
      if (event.type === "message_delta") stop = event.delta.stop_reason;
    }
    return fromBlocks(blocks, stop);
  },
};

function fromBlocks(blocks, stopReason) {
  const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("");
  const calls = blocks.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, arguments: b.input }));
  return response(text, calls, stopReason);
}

function client(wire) {
  return {
    async complete(req) {
      const resp = await request(wire.url(), {
        method: "POST",
        headers: { "content-type": "application/json", ...wire.headers() },
        body: JSON.stringify(wire.body(req)),
      });
      const raw = resp.text;
      if (resp.status !== 200) {
        let message = raw;
        try {
          message = JSON.parse(raw).error.message ?? raw;
        } catch {}
        throw new Error(`${env.SANDBOX_WIRE} ${resp.status}: ${message}`);
      }
      if (!stream) return wire.decode(JSON.parse(raw));
      const events = raw
        .split("\n")
        .filter((line) => line.startsWith("data:") && line.slice(5).trim() !== "[DONE]")
        .map((line) => JSON.parse(line.slice(5)));
      return wire.assemble(events);
    },
  };
}

// -- main ------------------------------------------------------------------------------------------

async function main() {
  const wires = { openai, anthropic };
  const wire = wires[env.SANDBOX_WIRE];
  if (!sandbox) {
    console.error("SANDBOX_BASE_URL is not set: run me with `sandbox grade --wire openai,anthropic -- node loop.mjs`");
    process.exit(2);
  }
  if (!wire) {
    console.error(`this program speaks ${Object.keys(wires).join(" and ")}, not ${env.SANDBOX_WIRE}`);
    process.exit(2);
  }
  const tools = JSON.parse((await request(`${sandbox}/tools`)).text);
  const req = { model: env.SANDBOX_MODEL, messages: [userText(env.SANDBOX_PROMPT)], tools };
  try {
    const resp = await complete(client(wire), req);
    console.log(resp.text);
  } catch (error) {
    console.error(error.message);
    process.exit(1);
  }
  agent.destroy(); // the kept-alive connections would hold the process open
}

await main();
