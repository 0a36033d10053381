// What a busy worker leaves in V8's old generation. Whatever outlives a young-generation
// collection is promoted; a worker that promoted per-job garbage made V8 grow its heap
// with the job rate (about 1 KB a job, a peak near 105 MB; docs/PERFORMANCE.md, engine
// notes). Measured with V8's own GC profiler: no timing, only bytes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import v8 from 'node:v8';
import { makeSluice, uniqueQueue } from './helpers.js';

test('a draining worker promotes next to nothing per job into the old generation', async () => {
  const sluice = await makeSluice();
  const q = uniqueQueue();
  await sluice.queues.put(q, {});
  const send = async (jobs: number) => {
    for (let i = 0; i < jobs; i += 1000) {
      await sluice.sendMany(
        q,
        Array.from({ length: 1000 }, (_, j) => ({ data: { i: i + j } })),
      );
    }
  };
  const drain = async (jobs: number) => {
    let done = 0;
    let worker: ReturnType<typeof sluice.work> | undefined;
    await new Promise<void>((resolve) => {
      worker = sluice.work(q, { concurrency: 10 }, async () => {
        if (++done === jobs) resolve();
      });
    });
    await worker!.stop();
  };
  // A first drain, not measured: what grows once (compiled code, the pool's connections
  // and prepared statements, buffers sized to the first batches) is promoted there.
  await send(2_000);
  await drain(2_000);

  const jobs = 10_000;
  await send(jobs);
  const profiler = new v8.GCProfiler();
  profiler.start();
  await drain(jobs);
  const { statistics } = profiler.stop();

  type Heap = v8.GCProfilerResult['statistics'][number]['beforeGC'];
  const oldSpace = (s: Heap) => s.heapSpaceStatistics.find((x) => x.spaceName === 'old_space')!.spaceUsedSize;
  const scavenges = statistics.filter((e) => e.gcType === 'Scavenge');
  const promoted = scavenges.reduce((sum, e) => sum + Math.max(0, oldSpace(e.afterGC) - oldSpace(e.beforeGC)), 0);
  // The drain must have been collected a few times, or there is nothing to judge.
  assert.ok(scavenges.length >= 3, `only ${scavenges.length} young-generation collections during the drain`);
  // 6-12 bytes a job measured; about 1,000 when contexts, the running set or
  // node-postgres's promises kept each job alive past a collection, and 121 when the
  // worker's statements built their values by spreading fresh objects.
  assert.ok(promoted / jobs < 100, `${Math.round(promoted / jobs)} bytes a job promoted over ${scavenges.length} collections`);
});
