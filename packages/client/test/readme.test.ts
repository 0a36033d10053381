// The README's example compiles under `tsc --strict` against the generated types: the
// fields the API always sends are required, so the obvious code needs no `?.` or `!`.
// The example is compiled as a file beside this one (a virtual file: nothing is written),
// importing `@sluice/client` as a user's code does.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import ts from 'typescript';

const README = new URL('../README.md', import.meta.url);
const EXAMPLE = fileURLToPath(new URL('./readme-example.ts', import.meta.url));

/** The README's ```ts blocks, in order. */
function readmeExamples(): string[] {
  return [...readFileSync(README, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** tsc --strict --noEmit of `source` as if it were `path`: the diagnostics, formatted. */
function strictErrors(path: string, source: string): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    // The package's source types (its `development` export), the same as its built ones.
    customConditions: ['development'],
    skipLibCheck: true,
    types: ['node'],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) =>
    name === path ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === path || fileExists(name);
  const program = ts.createProgram([path], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
    return `${where ? `${d.file!.fileName === path ? 'README' : d.file!.fileName}:${where.line + 1}: ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

test("the README's example compiles under tsc --strict", () => {
  const examples = readmeExamples();
  assert.ok(examples.length >= 1, 'the README has a ```ts example');
  // A module (it imports), with top-level await: an ES module as NodeNext reads this package.
  assert.deepEqual(strictErrors(EXAMPLE, examples.join('\n')), []);
});

test('the check can fail: an optional field used as required is an error', () => {
  const wrong = `import { createSluiceHttpClient } from '@sluice/client';
const client = createSluiceHttpClient({ baseUrl: 'http://127.0.0.1:8080', token: 't' });
const claimed = await client.POST('/api/queues/{queue}/claim', { params: { path: { queue: 'q' } }, body: {} });
const first: string = claimed.data.jobs[0].leaseToken;
export {};
`;
  const errors = strictErrors(EXAMPLE, wrong);
  // data may be undefined (an error answer), and jobs[0] may be undefined.
  assert.ok(
    errors.some((e) => /possibly 'undefined'/.test(e)),
    errors.join('\n'),
  );
});
