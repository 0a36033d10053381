/** The LLM saboteur against a fake OpenAI-compatible server on a loopback port (a real HTTP server, the real client). */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { ChatClient, LlmReplyInvalidError, LlmRequestError, LlmSaboteur, parseReply, sabotage, type Challenge } from '../src/index.js';
import { engine } from './helpers.js';

const API_KEY = 'sk-test-7f3a9c-do-not-log';
type Handler = (body: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) => void;
const requests: { body: Record<string, unknown>; authorization: string | undefined; url: string | undefined }[] = [];
let handlers: Handler[] = [];

const server = createServer((req, res) => {
  let raw = '';
  req.on('data', (chunk) => (raw += chunk));
  req.on('end', () => {
    const body = JSON.parse(raw || '{}') as Record<string, unknown>;
    requests.push({ body, authorization: req.headers.authorization, url: req.url });
    const handler = handlers.shift();
    if (handler) handler(body, req, res);
    else reply(res, 500, { error: 'no handler left' });
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
after(() => {
  server.closeAllConnections();
  server.close();
});

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
const completion =
  (content: string): Handler =>
  (_b, _r, res) =>
    reply(res, 200, { choices: [{ message: { role: 'assistant', content } }] });
function reset(...next: Handler[]): void {
  requests.length = 0;
  handlers = next;
}
function recordingLogger() {
  const lines: string[] = [];
  const at = (obj: object, msg?: string) => void lines.push(`${msg ?? ''} ${JSON.stringify(obj)}`);
  return { lines, logger: { warn: at, info: at, debug: at } };
}

const challenge: Challenge = {
  language: 'python',
  description: 'add two numbers',
  gold: { 'sol.py': 'def add(a, b):\n    return a + b\n' },
  tests: {
    'test_sol.py': 'from sol import add\ndef test_add():\n    assert add(1, 2) == 3\ndef test_double():\n    assert add(2, 2) == 4\n',
  },
};
const llmReply = (code: string, family = 'operator') =>
  JSON.stringify({ files: { 'sol.py': code }, family, bug: 'the wrong operator', hint: 'Check the sum.' });

test('a completion: POST /chat/completions with the key as a bearer token, default model gpt-4o, a JSON reply asked for', async () => {
  reset(completion('{"ok": true}'));
  const client = new ChatClient({ baseUrl: `${baseUrl}/`, apiKey: API_KEY });
  assert.equal(await client.complete([{ role: 'user', content: 'hi' }], { json: true }), '{"ok": true}');
  assert.equal(requests[0]!.url, '/v1/chat/completions');
  assert.equal(requests[0]!.authorization, `Bearer ${API_KEY}`);
  assert.equal(requests[0]!.body.model, 'gpt-4o');
  assert.deepEqual(requests[0]!.body.response_format, { type: 'json_object' });
});

test('retries 500 and 429 (honouring Retry-After), then succeeds', async () => {
  reset(
    (_b, _r, res) => reply(res, 500, { error: 'busy' }),
    (_b, _r, res) => reply(res, 429, { error: 'slow down' }, { 'retry-after': '0' }),
    completion('fine'),
  );
  const client = new ChatClient({ baseUrl, apiKey: API_KEY, retryDelayMs: 10, maxRetries: 2 });
  assert.equal(await client.complete([{ role: 'user', content: 'hi' }]), 'fine');
  assert.equal(requests.length, 3);
});

test('a 401 is not retried, and neither the error nor the log shows the key, even when the server echoes it', async () => {
  reset((_b, req, res) => reply(res, 401, { error: `invalid key ${req.headers.authorization}` }));
  const { lines, logger } = recordingLogger();
  const client = new ChatClient({ baseUrl, apiKey: API_KEY, retryDelayMs: 10, logger });
  const error = await client.complete([{ role: 'user', content: 'hi' }]).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof LlmRequestError);
  assert.equal(error.status, 401);
  assert.equal(requests.length, 1);
  assert.match(error.message, /HTTP 401/);
  assert.doesNotMatch(error.message, /sk-test/);
  assert.ok(lines.length > 0);
  assert.ok(lines.every((line) => !line.includes(API_KEY)));
});

test('a server that never answers times out on every attempt', async () => {
  const hang: Handler = () => {};
  reset(hang, hang);
  const { lines, logger } = recordingLogger();
  const client = new ChatClient({ baseUrl, apiKey: API_KEY, timeoutMs: 200, maxRetries: 1, retryDelayMs: 10, logger });
  await assert.rejects(
    client.complete([{ role: 'user', content: 'hi' }]),
    (e: unknown) => e instanceof LlmRequestError && /timed out after 200 ms/.test(e.message),
  );
  assert.equal(requests.length, 2);
  assert.ok(lines.every((line) => !line.includes(API_KEY)));
});

test('replies are validated: JSON object, known solution paths, a bug and a hint', () => {
  const gold = challenge.gold;
  assert.throws(() => parseReply('not json', gold), LlmReplyInvalidError);
  assert.throws(() => parseReply('{"files": {"sol.py": "x"}, "bug": "b"}', gold), /"hint"/);
  assert.throws(() => parseReply('{"files": {"../etc/passwd": "x"}, "bug": "b", "hint": "h"}', gold), /invalid path/);
  assert.throws(() => parseReply('{"files": {"test_sol.py": "x"}, "bug": "b", "hint": "h"}', gold), /not a solution file/);
  const fenced = parseReply('```json\n{"files": {"sol.py": "changed"}, "bug": "b", "hint": "h"}\n```', gold);
  assert.deepEqual(fenced.files, { 'sol.py': 'changed' });
});

test('sabotage: the LLM is asked for a named family; its bug is proven and accepted; the result names the LLM saboteur and the family', async () => {
  reset(completion(llmReply('def add(a, b):\n    return a - b\n')));
  const llm = new LlmSaboteur({ baseUrl, apiKey: API_KEY, model: 'test-model' });
  const result = await sabotage(challenge, { llm, engine: engine('sluice_proof_t_llm') });
  assert.equal(result.accepted, true, result.summary);
  assert.equal(result.saboteur, 'llm');
  assert.equal(result.candidate?.hint, 'Check the sum.');
  assert.equal(requests[0]!.body.model, 'test-model');
  const prompt = JSON.stringify(requests[0]!.body.messages);
  assert.match(prompt, /EVERY test/);
  assert.match(prompt, /def test_double/);
  // Seed 1 starts at the first realistic family.
  assert.match(prompt, /The bug must be of this family: \\"off_by_one\\"/);
  assert.match(prompt, /Never merely add a constant to a returned value/);
  assert.equal(result.family, 'operator');
  assert.deepEqual(result.families, { tried: ['operator'], proved: ['operator'] });
  assert.equal(result.variants[0]?.lastResort, false);
});

test('sabotage: a return-value perturbation from the LLM is refused unproven, and the next prompt says why', async () => {
  reset(
    completion(llmReply('def add(a, b):\n    return a + b + 1\n', 'off_by_one')),
    completion(llmReply('def add(a, b):\n    return b - a\n')),
  );
  const llm = new LlmSaboteur({ baseUrl, apiKey: API_KEY });
  const result = await sabotage(challenge, { llm, engine: engine('sluice_proof_t_llm'), mutation: { seed: 2 } });
  assert.equal(result.accepted, true, result.summary);
  assert.equal(result.saboteur, 'llm');
  assert.equal(result.family, 'operator');
  assert.equal(result.attempts[0]!.family, 'return_value');
  assert.match(result.attempts[0]!.error ?? '', /a return-value perturbation, not a boundary comparison/);
  assert.equal(result.attempts[0]!.codes, undefined, 'never proven');
  // Seed 2 asks for the second family first; the refusal goes back with its reason.
  assert.match(JSON.stringify(requests[0]!.body.messages), /this family: \\"boundary\\"/);
  assert.match(JSON.stringify(requests[1]!.body.messages), /rejected because: a return-value perturbation/);
});

test('sabotage: the LLM naming the return-value family itself is refused the same way', async () => {
  reset(
    completion(llmReply('def add(a, b):\n    return (a + b) * 2\n', 'return_value')),
    completion(llmReply('def add(a, b):\n    return a - b\n')),
  );
  const llm = new LlmSaboteur({ baseUrl, apiKey: API_KEY });
  const result = await sabotage(challenge, { llm, engine: engine('sluice_proof_t_llm') });
  assert.equal(result.accepted, true, result.summary);
  assert.deepEqual(
    result.attempts.map((a) => [a.family, a.accepted]),
    [
      ['return_value', false],
      ['operator', true],
    ],
  );
});

test('sabotage: a rejected LLM bug goes back into the next prompt with its reasons', async () => {
  reset(completion(llmReply('def add(a, b):\n    return a * b\n')), completion(llmReply('def add(a, b):\n    return a - b\n')));
  const llm = new LlmSaboteur({ baseUrl, apiKey: API_KEY });
  const result = await sabotage(challenge, { llm, engine: engine('sluice_proof_t_llm') });
  assert.equal(result.accepted, true, result.summary);
  assert.equal(result.saboteur, 'llm');
  assert.deepEqual(
    result.attempts.map((a) => [a.accepted, a.prescreened ?? false]),
    [
      [false, true],
      [true, false],
    ],
  );
  assert.match(JSON.stringify(requests[1]!.body.messages), /rejected because: sabotaged: \\"test_sol.py::test_double\\" still passes/);
});

test('sabotage: a bug that fails only under some seeds is flaky, and goes back into the next prompt', async () => {
  // Under PYTHONHASHSEED 0 "banana" comes first, so the bug fires in the first run only.
  const flaky = 'def add(a, b):\n    return a + b + (1 if next(iter({"apple", "banana", "cherry"})) == "banana" else 0)\n';
  reset(completion(llmReply(flaky)), completion(llmReply('def add(a, b):\n    return a - b\n')));
  const llm = new LlmSaboteur({ baseUrl, apiKey: API_KEY });
  const result = await sabotage(challenge, { llm, engine: engine('sluice_proof_t_llm') });
  assert.equal(result.accepted, true, result.summary);
  assert.deepEqual(
    result.attempts.map((a) => [a.accepted, a.codes]),
    [
      [false, ['flaky']],
      [true, []],
    ],
  );
  assert.match(
    JSON.stringify(requests[1]!.body.messages),
    /rejected because: sabotaged: \\"test_sol.py::test_add\\" failed in the first run but passed in the run with seed 1/,
  );
});

test('sabotage: a suite that judges the source text is rejected before any bug is tried', async () => {
  reset();
  const pinned = {
    'test_sol.py': `${challenge.tests['test_sol.py']}def test_source():\n    assert add(2, 2) == 4 and "a + b" in open("sol.py").read()\n`,
  };
  const llm = new LlmSaboteur({ baseUrl, apiKey: API_KEY });
  const result = await sabotage({ ...challenge, tests: pinned }, { llm, engine: engine('sluice_proof_t_llm') });
  assert.equal(result.accepted, false);
  assert.equal(requests.length, 0, 'the LLM was never asked');
  assert.deepEqual([...new Set(result.goldReasons?.map((r) => r.code))], ['judges_text']);
  assert.match(
    result.summary,
    /^the gold run is not a valid suite \(judges_text\): gold: "test_sol.py::test_source" fails on an equivalent rewrite/,
  );
});

test('sabotage: when the LLM keeps answering nonsense, the mutation saboteur takes over', async () => {
  reset(completion('no json here'), completion('{"files": {}}'));
  const llm = new LlmSaboteur({ baseUrl, apiKey: API_KEY });
  const result = await sabotage(challenge, { llm, llmAttempts: 2, engine: engine('sluice_proof_t_llm') });
  assert.equal(result.accepted, true, result.summary);
  assert.equal(result.saboteur, 'mutation');
  assert.deepEqual(
    result.attempts.slice(0, 2).map((a) => [a.saboteur, a.error !== undefined]),
    [
      ['llm', true],
      ['llm', true],
    ],
  );
});

test('configuration from the environment: no key, no LLM', () => {
  assert.equal(LlmSaboteur.fromEnvironment({}), null);
  const configured = LlmSaboteur.fromEnvironment({ SLUICE_LLM_API_KEY: API_KEY, SLUICE_LLM_BASE_URL: baseUrl });
  assert.equal(configured?.client.model, 'gpt-4o');
  assert.equal(LlmSaboteur.fromEnvironment({ OPENAI_API_KEY: API_KEY, SLUICE_LLM_MODEL: 'other' })?.client.model, 'other');
  assert.throws(() => LlmSaboteur.requireFromEnvironment({}), /SLUICE_LLM_API_KEY/);
});
