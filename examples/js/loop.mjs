// The lesson's tool loop in JavaScript, as a program `sandbox grade` can judge, on every challenge and
// all four wire formats:
//
//     sandbox grade -- node examples/js/loop.mjs
//
// Node 18 or newer, no packages: node:http does the HTTP, over one kept-alive agent. (The built-in
// fetch works too, but loading and warming it up costs Node 0.1-0.3 s in every run, and the grader
// runs the program once per case: on a busy machine a case took 1.58 s with fetch and 0.61 s with
// node:http, Node's own start being 0.47 s; `python bench/programs.py` measures it.) It speaks
// OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini, streaming or not, as
// SANDBOX_WIRE and SANDBOX_STREAM say; with SANDBOX_REASONING=1 it asks for the model's reasoning
// and sends each turn back whole, reasoning included. A model request the provider asks to retry (a
// 429, 503 or 529, or an answer that broke before its end) is sent again after the provider's hint,
// at most 3 times in all. The answer goes to stdout; at the bound, or when the retries run out, the
// report goes to stderr and the exit status is 1.

import http from "node:http";

const MAX_TOOL_ROUNDS = 5;
const MAX_ATTEMPTS = 3; // of one model request: the first and two retries
const BACKOFF_MS = 50; // before the first retry when the provider gives no hint; doubled each time
const RETRYABLE = new Set([0, 429, 503, 529]); // 0: the answer broke before it was whole

const env = process.env;
const sandbox = env.SANDBOX_BASE_URL;
const stream = env.SANDBOX_STREAM === "1";
const reasoning = env.SANDBOX_REASONING === "1";
const agent = new http.Agent({ keepAlive: true });

// ProviderError is the provider's refusal (its status, its name for the error, its words and its
// retry hint), or an answer that broke before it was whole (status 0).
class ProviderError extends Error {
  constructor(status, message, { type = "", retryAfter = null } = {}) {
    super(`${env.SANDBOX_WIRE} ${status}${type ? ` ${type}` : ""}: ${message}`);
    this.status = status;
    this.type = type;
    this.retryAfter = retryAfter; // seconds, or null: the provider gave no hint
  }
}

// request sends one HTTP request; resolves with the status, the headers and the whole body as text.
// A connection that closes before the whole body arrived is a ProviderError with status 0.
function request(url, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const broke = (error) =>
      reject(new ProviderError(0, `the connection closed before the answer was complete (${error.message})`, {
        type: "connection_error",
      }));
    const req = http.request(url, { method, headers, agent }, (resp) => {
      const chunks = [];
      resp.on("data", (chunk) => chunks.push(chunk));
      resp.on("end", () => {
        if (!resp.complete) return broke(new Error("the body ended early"));
        resolve({ status: resp.statusCode, headers: resp.headers, text: Buffer.concat(chunks).toString("utf8") });
      });
      resp.on("aborted", () => broke(new Error("aborted")));
      resp.on("error", broke);
    });
    req.on("error", broke);
    req.end(body);
  });
}

// -- the loop ------------------------------------------------------------------------------------

async function complete(client, req) {
  const history = [];
  for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
    const resp = await ask(client, req);

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

// ask is one model turn, tried up to MAX_ATTEMPTS times. Only the request is retried: the turn is
// appended and its tools run once, by complete, after an answer arrived whole.
async function ask(client, req) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await client.complete(req);
    } catch (error) {
      if (!(error instanceof ProviderError) || !RETRYABLE.has(error.status)) throw error; // a 400: never again
      if (attempt === MAX_ATTEMPTS) {
        throw new Error(
          `gave up after ${attempt} attempts: the provider kept answering ${error.status} (${error.type}): ` +
            `${error.message}; check the provider's status page and your rate limits`,
        );
      }
      const wait = error.retryAfter !== null ? error.retryAfter * 1000 : BACKOFF_MS * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 30_000)));
    }
  }
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

// response is one turn. `message.raw` is the turn as the provider sent it (its content blocks, output
// items or parts, reasoning included): it goes back exactly so.
function response(text, calls, stopReason, raw) {
  const message = { role: "assistant", text, calls, raw };
  return { message, toolCalls: calls, text, stopReason };
}

// dataLines is a server-sent event stream's data, one JSON value a line ([DONE] left out).
function dataLines(raw) {
  return raw
    .split("\n")
    .filter((line) => line.startsWith("data:") && line.slice(5).trim() !== "[DONE]")
    .map((line) => JSON.parse(line.slice(5)));
}

// incomplete is the error of a stream that ended without its end-of-turn event: retried like a cut.
const incomplete = () => new ProviderError(0, "the stream ended before the turn did", { type: "connection_error" });

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
  // A stream's chunks carry text deltas, and each call's fragments under its index; [DONE] ends it.
  assemble(raw) {
    if (!raw.includes("data: [DONE]")) throw incomplete();
    let text = "";
    let stop = null;
    const calls = [];
    for (const event of dataLines(raw)) {
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

const responses = {
  url: () => `${env.OPENAI_BASE_URL}/responses`,
  headers: () => ({ authorization: `Bearer ${env.OPENAI_API_KEY}` }),
  body(req) {
    const input = [];
    for (const m of req.messages) {
      if (m.role === "tool") input.push({ type: "function_call_output", call_id: m.callId, output: m.text });
      else if (m.role === "assistant") input.push(...(m.raw ?? responsesItems(m))); // as they came, reasoning too
      else input.push({ role: m.role, content: m.text });
    }
    const body = { model: req.model, input, stream };
    if (req.tools.length > 0) {
      // Function tools are strict unless told otherwise, and strict mode refuses most schemas.
      body.tools = req.tools.map((t) => ({ type: "function", ...t, strict: false }));
    }
    if (reasoning) body.reasoning = { summary: "auto" };
    return body;
  },
  decode(data) {
    if (data.status === "failed") throw new Error(`openai-responses: the response failed: ${data.error?.message}`);
    return fromItems(data.output, data.status);
  },
  // Each output item is announced, grows by deltas, and arrives whole in response.output_item.done;
  // response.completed (or .incomplete) ends the turn.
  assemble(raw) {
    const items = [];
    let status = null;
    for (const event of dataLines(raw)) {
      if (event.type === "error") throw new Error(`openai-responses stream error: ${event.message}`);
      if (event.type === "response.failed") throw new Error(`openai-responses: ${event.response.error?.message}`);
      if (event.type === "response.output_item.done") items[event.output_index] = event.item;
      if (event.type === "response.completed" || event.type === "response.incomplete") status = event.response.status;
    }
    if (status === null) throw incomplete();
    return fromItems(items.filter(Boolean), status);
  },
};

// responsesItems is a turn built by hand, as output items: its text, then its calls.
function responsesItems(m) {
  const items = m.text ? [{ role: "assistant", content: m.text }] : [];
  for (const c of m.calls) {
    items.push({ type: "function_call", call_id: c.id, name: c.name, arguments: JSON.stringify(c.arguments) });
  }
  return items;
}

function fromItems(items, status) {
  let text = "";
  const calls = [];
  for (const item of items) {
    if (item.type === "message") {
      for (const part of item.content) text += part.type === "output_text" ? part.text : (part.refusal ?? "");
    }
    if (item.type === "function_call") {
      calls.push({ id: item.call_id, name: item.name, arguments: JSON.parse(item.arguments || "{}") });
    }
  }
  return response(text, calls, calls.length > 0 ? "tool_use" : status, items);
}

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
        // The turn as it came, thinking blocks too; or, for a turn built by hand, its text and calls.
        const built = m.text ? [{ type: "text", text: m.text }] : [];
        for (const c of m.calls) built.push({ type: "tool_use", id: c.id, name: c.name, input: c.arguments });
        messages.push({ role: "assistant", content: m.raw ?? built });
      } else {
        messages.push({ role: m.role, content: m.text });
      }
    }
    const body = { model: req.model, max_tokens: 1024, messages, stream };
    if (req.tools.length > 0) {
      body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
    }
    if (reasoning) body.thinking = { type: "adaptive" };
    return body;
  },
  decode(data) {
    return fromBlocks(data.content, data.stop_reason);
  },
  // A stream's content blocks start, grow by deltas (tool input as JSON fragments, thinking and its
  // signature) and stop; message_stop ends the turn.
  assemble(raw) {
    const blocks = [];
    const json = [];
    let stop = null;
    let ended = false;
    for (const event of dataLines(raw)) {
      if (event.type === "error") throw new Error(`anthropic stream error: ${event.error.message}`);
      if (event.type === "content_block_start") {
        blocks[event.index] = { ...event.content_block };
        json[event.index] = "";
      }
      if (event.type === "content_block_delta") {
        const block = blocks[event.index];
        const delta = event.delta;
        if (delta.type === "text_delta") block.text += delta.text;
        if (delta.type === "input_json_delta") json[event.index] += delta.partial_json;
        if (delta.type === "thinking_delta") block.thinking += delta.thinking;
        if (delta.type === "signature_delta") block.signature = delta.signature;
      }
      if (event.type === "content_block_stop" && blocks[event.index].type === "tool_use") {
        blocks[event.index].input = JSON.parse(json[event.index] || "{}");
      }
      if (event.type === "message_delta") stop = event.delta.stop_reason;
      if (event.type === "message_stop") ended = true;
    }
    if (!ended) throw incomplete();
    return fromBlocks(blocks.filter(Boolean), stop);
  },
};

function fromBlocks(blocks, stopReason) {
  const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("");
  const calls = blocks.filter((b) => b.type === "tool_use").map((b) => ({ id: b.id, name: b.name, arguments: b.input }));
  return response(text, calls, stopReason, blocks);
}

// Gemini pairs a turn's results with its calls by order and name; a call's id is sent back only when
// the model gave one. Thought parts and signatures go back on the parts that carried them.
let localIds = 0;
const gemini = {
  url: () => {
    const model = encodeURIComponent(env.SANDBOX_MODEL);
    const method = stream ? "streamGenerateContent?alt=sse" : "generateContent";
    return `${env.GOOGLE_GEMINI_BASE_URL}/v1beta/models/${model}:${method}`;
  },
  headers: () => ({ "x-goog-api-key": env.GEMINI_API_KEY }),
  body(req) {
    const contents = [];
    const names = new Map(); // call id -> the call, for its result
    for (const m of req.messages) {
      if (m.role === "tool") {
        const call = names.get(m.callId);
        const result = { name: call.name, response: m.isError ? { error: m.text } : { result: m.text } };
        if (call.wireId) result.id = call.wireId;
        const part = { functionResponse: result };
        const last = contents.at(-1);
        if (last?.role === "user" && last.parts[0].functionResponse) last.parts.push(part);
        else contents.push({ role: "user", parts: [part] });
      } else if (m.role === "assistant") {
        for (const call of m.calls) names.set(call.id, call);
        const built = m.text ? [{ text: m.text }] : [];
        for (const c of m.calls) built.push({ functionCall: { name: c.name, args: c.arguments } });
        contents.push({ role: "model", parts: m.raw ?? built }); // thoughts and signatures as they came
      } else {
        contents.push({ role: "user", parts: [{ text: m.text }] });
      }
    }
    const body = { contents, generationConfig: { maxOutputTokens: 1024 } };
    if (req.tools.length > 0) {
      // parametersJsonSchema takes full JSON Schema; `parameters` refuses keys such as additionalProperties.
      const functionDeclarations = req.tools.map((t) => ({
        name: t.name,
        description: t.description,
        parametersJsonSchema: t.parameters,
      }));
      body.tools = [{ functionDeclarations }];
    }
    if (reasoning) body.generationConfig.thinkingConfig = { includeThoughts: true };
    return body;
  },
  decode(data) {
    const candidate = data.candidates[0];
    return fromParts(candidate.content?.parts ?? [], candidate.finishReason);
  },
  // Each chunk carries the next parts of the turn; the one with a finishReason ends it.
  assemble(raw) {
    const parts = [];
    let stop = null;
    for (const chunk of dataLines(raw)) {
      if (chunk.error) throw new Error(`gemini stream error: ${chunk.error.message}`);
      const candidate = chunk.candidates?.[0];
      // The last chunk's empty text part carries nothing: sent back, the API refuses it.
      parts.push(...(candidate?.content?.parts ?? []).filter((p) => p.text !== "" || Object.keys(p).length > 1));
      stop = candidate?.finishReason ?? stop;
    }
    if (stop === null) throw incomplete();
    return fromParts(parts, stop);
  },
};

function fromParts(parts, stopReason) {
  const text = parts.filter((p) => p.text !== undefined && !p.thought).map((p) => p.text).join("");
  const calls = parts
    .filter((p) => p.functionCall)
    .map((p) => ({
      id: p.functionCall.id ?? `local-${++localIds}`,
      wireId: p.functionCall.id,
      name: p.functionCall.name,
      arguments: p.functionCall.args ?? {},
    }));
  return response(text, calls, stopReason, parts);
}

// errorOf reads an error response: the message, the provider's name for the error (OpenAI's and
// Anthropic's error.type, Gemini's error.status) and the retry hint (retry-after-ms, retry-after in
// seconds, or Gemini's google.rpc.RetryInfo retryDelay in the body).
function errorOf(resp) {
  let error = {};
  try {
    const data = JSON.parse(resp.text);
    error = (Array.isArray(data) ? data[0] : data).error ?? {};
  } catch {}
  let retryAfter = null;
  if (resp.headers["retry-after-ms"] !== undefined) retryAfter = Number(resp.headers["retry-after-ms"]) / 1000;
  else if (resp.headers["retry-after"] !== undefined) retryAfter = Number(resp.headers["retry-after"]);
  else {
    const delay = (error.details ?? []).find((detail) => detail.retryDelay)?.retryDelay;
    if (delay) retryAfter = Number.parseFloat(delay);
  }
  const type = error.type ?? error.status ?? "";
  return new ProviderError(resp.status, error.message ?? resp.text, { type, retryAfter });
}

function client(wire) {
  return {
    async complete(req) {
      const resp = await request(wire.url(), {
        method: "POST",
        headers: { "content-type": "application/json", ...wire.headers() },
        body: JSON.stringify(wire.body(req)),
      });
      if (resp.status !== 200) throw errorOf(resp);
      return stream ? wire.assemble(resp.text) : wire.decode(JSON.parse(resp.text));
    },
  };
}

// -- main ------------------------------------------------------------------------------------------

async function main() {
  const wires = { openai, "openai-responses": responses, anthropic, gemini };
  const wire = wires[env.SANDBOX_WIRE];
  if (!sandbox) {
    console.error("SANDBOX_BASE_URL is not set: run me with `sandbox grade -- node loop.mjs`");
    process.exit(2);
  }
  if (!wire) {
    console.error(`this program speaks ${Object.keys(wires).join(", ")}, not ${env.SANDBOX_WIRE}`);
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
