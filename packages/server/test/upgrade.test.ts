// A rolling upgrade over HTTP: while the database runs another release's functions (its
// migrator recorded another set), /readyz says not ready and why, and the dashboard's
// /api/instance names both sets; once the sets match again, both say so by themselves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { api, call, startTestServer } from './helpers.js';

const server = await startTestServer();
const { admin } = api(server);

test("/readyz and /api/instance say when the database runs another release's functions", async () => {
  await server.sluice.queues.put('upgrading', {});
  await server.sluice.send('upgrading', 1);
  const ready = await admin('GET', '/api/instance');
  assert.equal(ready.status, 200, ready.text);
  assert.equal(ready.body.ready, true);
  assert.match(ready.body.functionSet.expected, /^[0-9a-f]{16}$/);
  assert.equal(ready.body.functionSet.actual, ready.body.functionSet.expected);
  assert.equal((await call(server.url, 'GET', '/readyz')).status, 200);

  // What another release's migrator leaves behind: one function file of another text.
  const client = new pg.Client({ connectionString: server.db.url });
  await client.connect();
  try {
    const { rows } = await client.query("SELECT checksum FROM sluice.migration_function WHERE file = 'claim.sql'");
    await client.query("UPDATE sluice.migration_function SET checksum = 'another-release' WHERE file = 'claim.sql'");
    const notReady = await call(server.url, 'GET', '/readyz');
    assert.equal(notReady.status, 503, notReady.text);
    assert.equal(notReady.body.error, 'not_ready');
    assert.match(notReady.body.message, /another release/);
    const instance = await admin('GET', '/api/instance');
    assert.equal(instance.body.ready, false);
    assert.equal(instance.body.problem, 'functions');
    assert.notEqual(instance.body.functionSet.actual, instance.body.functionSet.expected);
    const claim = await admin('POST', '/api/queues/upgrading/claim', { workerId: 'w' });
    assert.equal(claim.status, 503, claim.text);
    assert.equal(claim.body.error, 'schema_version', 'no claim while the sets differ');

    await client.query("UPDATE sluice.migration_function SET checksum = $1 WHERE file = 'claim.sql'", [rows[0].checksum]);
  } finally {
    await client.end();
  }
  assert.equal((await call(server.url, 'GET', '/readyz')).status, 200);
  assert.equal((await admin('GET', '/api/instance')).body.ready, true);
  const claimed = await admin('POST', '/api/queues/upgrading/claim', { workerId: 'w' });
  assert.equal(claimed.status, 200, claimed.text);
});
