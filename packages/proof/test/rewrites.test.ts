/**
 * The equivalent-gold rewrites on their own (no sandbox): what they change, and what they
 * must leave alone so the rewrite stays equivalent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { parse } from '@babel/parser';
import { rewriteJavaScript } from '../src/integrity/rewrite-javascript.js';
import { rewritePython } from '../src/integrity/rewrite-python.js';
import { rewriteSql } from '../src/integrity/rewrite-sql.js';

const PYTHON = '/usr/bin/python3';
const COMMENT = /^(#|--|\/\/) an equivalent rewrite of the solution\n/m;

/** What Python prints for `expression` after running `source` (our own fixed text, no sandbox needed). */
function pythonValue(source: string, expression: string): string {
  return execFileSync(PYTHON, ['-c', `${source}\nprint(${expression})`], { encoding: 'utf8', timeout: 10_000 }).trim();
}

test('python: a run of defs is reversed only when no def evaluates another when defined', async () => {
  const independent = 'def add(a, b):\n    return a + b\n\n\ndef double(x):\n    return add(x, x)\n';
  assert.equal(
    await rewritePython(independent, new Set()),
    '# an equivalent rewrite of the solution\ndef double(x_1):\n        return add(x_1, x_1)\n\n\ndef add(a_1, b_1):\n        return a_1 + b_1\n',
  );

  const cases = [
    // A default is evaluated by `def`: `g` needs `f` bound first, and its default still names the outer `f`.
    { source: 'def f():\n    return 1\n\n\ndef g(f=f):\n    return f() + 1\n', call: 'g()', first: 'def f', value: '2' },
    // So are annotations, of a parameter and of the return.
    { source: 'def f(x):\n    return x\n\n\ndef g(x: f = 3) -> f:\n    return x * 2\n', call: 'g()', first: 'def f', value: '6' },
  ];
  for (const { source, call, first, value } of cases) {
    const rewritten = await rewritePython(source, new Set());
    assert.ok(rewritten, source);
    assert.ok(rewritten.indexOf(first) < rewritten.indexOf('def g'), `the defs kept their order:\n${rewritten}`);
    if (existsSync(PYTHON)) assert.equal(pythonValue(rewritten, call), value, rewritten);
  }
  const defaults = await rewritePython(cases[0]!.source, new Set());
  assert.match(defaults!, /def g\(f_1=f\):\n {8}return f_1\(\) \+ 1/, 'the parameter is renamed, its default is not');

  // A decorated def is not part of a run: its decorator is always defined above it.
  const decorated = 'def twice(fn):\n    return lambda: fn() * 2\n\n\n@twice\ndef three():\n    return 3\n\n\ndef four():\n    return 4\n';
  const rewritten = await rewritePython(decorated, new Set());
  assert.ok(rewritten!.indexOf('def twice') < rewritten!.indexOf('@twice'), rewritten!);
  if (existsSync(PYTHON)) assert.equal(pythonValue(rewritten!, 'three() + four()'), '10');
});

test('sql: only the code of CREATE FUNCTION, PROCEDURE and DO is respaced; dollar-quoted values are kept', async () => {
  const source = [
    'CREATE TABLE note (id int PRIMARY KEY, body text);',
    'INSERT INTO note VALUES (1, $$a  b$$) ON CONFLICT (id) DO UPDATE SET body = $$x y$$;',
    'CREATE OR REPLACE FUNCTION body_of(n int) RETURNS text LANGUAGE sql AS $$ SELECT body FROM note WHERE id = n $$;',
    'COMMENT ON FUNCTION body_of(int) IS $$the note text$$;',
    'DO $do$ BEGIN PERFORM 1; END $do$;',
    '',
  ].join('\n');
  const rewritten = await rewriteSql(source);
  assert.equal(
    rewritten,
    [
      '-- an equivalent rewrite of the solution',
      'CREATE  TABLE  note  (id  int  PRIMARY  KEY,  body  text);',
      'INSERT  INTO  note  VALUES  (1,  $$a  b$$)  ON  CONFLICT  (id)  DO  UPDATE  SET  body  =  $$x y$$;',
      'CREATE  OR  REPLACE  FUNCTION  body_of(n  int)  RETURNS  text  LANGUAGE  sql  AS  $$ SELECT  body  FROM  note  WHERE  id  =  n $$;',
      'COMMENT  ON  FUNCTION  body_of(int)  IS  $$the note text$$;',
      'DO  $do$ BEGIN  PERFORM  1;  END $do$;',
      '',
    ].join('\n'),
  );
});

test('javascript: the rewrite changes indentation even with nothing to rename, and keeps literals and exports', () => {
  const gold = [
    'export const LIMIT = 10;',
    'export function limit() {',
    '  if (LIMIT > 5) {',
    '    return LIMIT;',
    '  }',
    '  return 0;',
    '}',
    'export const banner = `line one',
    '  line two`;',
    "export const joined = 'a\\",
    "  b';",
    '',
  ].join('\n');
  const rewritten = rewriteJavaScript('limit.js', gold);
  assert.ok(rewritten);
  const body = rewritten.replace(COMMENT, '');
  assert.notEqual(body.trimEnd(), gold.trimEnd(), 'formatting changed');
  assert.equal(body.replace(/\s+/g, ' ').trim(), gold.replace(/\s+/g, ' ').trim(), 'only whitespace changed');
  assert.match(body, /\n {4}if \(LIMIT > 5\) \{\n {8}return LIMIT;\n {4}\}/);
  assert.ok(body.includes('`line one\n  line two`'), 'a template literal is kept as it was');
  assert.ok(body.includes("'a\\\n  b'"), 'a continued string is kept as it was');
  const exported = (code: string) =>
    parse(code, { sourceType: 'module' }).program.body.flatMap((s) => {
      if (s.type !== 'ExportNamedDeclaration' || !s.declaration) return [];
      const d = s.declaration;
      return d.type === 'FunctionDeclaration'
        ? [d.id!.name]
        : d.type === 'VariableDeclaration'
          ? d.declarations.map((v) => (v.id as { name: string }).name)
          : [];
    });
  assert.deepEqual(exported(rewritten), exported(gold));
  assert.deepEqual(exported(gold), ['LIMIT', 'limit', 'banner', 'joined']);
});

test('typescript: a template literal type and a template literal keep their text; indentation doubled', () => {
  const gold = 'type Key = `id-${string}`;\nexport function key(n: number): Key {\n  const text = `id-${n}`;\n  return text as Key;\n}\n';
  const rewritten = rewriteJavaScript('key.ts', gold);
  assert.equal(
    rewritten,
    '// an equivalent rewrite of the solution\ntype Key = `id-${string}`;\nexport function key(_n2: number): Key {\n    const _text2 = `id-${_n2}`;\n    return _text2 as Key;\n}\n',
  );
});
