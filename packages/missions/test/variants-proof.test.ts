/**
 * Variants end to end with the real proof engine: a proof job stores a mission with several
 * proven bugs of distinct families, each with its own verdict (every test fails on it, gold
 * passes); two candidates of a cohort get different variants, each sees their variant's
 * code, and grading judges their instance's variant and names it.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CATALOG, OfflineGenerator } from '../src/index.js';
import { engine, harness, settled, type Harness } from './helpers.js';

const paginate = CATALOG.find((e) => e.id === 'py-paginate')!;
let h: Harness;
before(async () => {
  h = await harness({
    generator: new OfflineGenerator({ catalog: [paginate], generationDelayMs: 0 }),
    // One run per side: the repetitions are the proof engine's own tests' business.
    engine: { ...engine('sluice_missions_t_variants_proof'), proofRepetitions: 1 },
    config: { refillCron: null, variantsPerMission: 3 },
  });
  h.missions.startWorkers({ refill: false, planning: false });
});
after(() => h.close());

test(
  'a proven mission holds distinct proven variants; each candidate is served and graded on their own',
  { timeout: 120_000 },
  async () => {
    const { id: jobId } = await h.missions.enqueueGeneration({ domain: 'engineering', seed: 1 });
    const progress = await settled(h.missions, jobId, 90_000);
    assert.equal(progress.state, 'proven', JSON.stringify(progress));
    const mission = await h.missions.getMission(progress.state === 'proven' ? progress.missionId : '');
    const { variants } = mission;
    assert.equal(variants.length, 3, JSON.stringify(variants.map((v) => [v.family, v.bugDescription])));
    assert.equal(new Set(variants.map((v) => v.family)).size, 3, 'distinct families');
    assert.deepEqual(
      variants.map((v) => v.ordinal),
      [1, 2, 3],
    );
    assert.deepEqual(variants[0]!.sabotaged, mission.sabotaged, "the mission's own bug is its first variant");
    assert.equal(new Set(variants.map((v) => JSON.stringify(v.sabotaged))).size, 3, 'three different bugs');
    for (const v of variants) {
      assert.ok(!v.lastResort && v.family !== 'return_value', `${v.family}: realistic`);
      assert.ok(v.difficulty >= 1 && v.difficulty <= 3);
      assert.ok(v.hint && v.bugDescription);
      assert.ok(
        v.proof.tests.length >= 2 && v.proof.tests.every((t) => t.gold === 'passed' && t.sabotaged === 'failed' && t.ok),
        `${v.family}: ${v.proof.summary}`,
      );
    }

    await h.missions.approve(mission.id);
    const { invitations } = await h.missions.inviteCohort({
      role: 'backend-engineer',
      candidates: [
        { name: 'Ada', email: 'ada@example.com' },
        { name: 'Bo', email: 'bo@example.com' },
      ],
    });
    const [ada, bo] = await Promise.all(
      invitations.map((v) => h.missions.serve({ userId: `invitation:${v.id}`, role: 'backend-engineer' })),
    );
    assert.deepEqual([ada!.variant, bo!.variant].sort(), [1, 2]);
    for (const instance of [ada!, bo!]) assert.deepEqual(instance.files, variants[instance.variant! - 1]!.sabotaged);

    // Ada sends her variant back unchanged: failed on it. Bo fixes his: passed. Each grade names its variant.
    const unchanged = await h.missions.submit(ada!.id, ada!.files);
    const fixed = await h.missions.submit(bo!.id, mission.gold);
    const [failed, passed] = await Promise.all([unchanged, fixed].map((s) => h.missions.awaitGrade(s.id, { timeoutMs: 60_000 })));
    assert.equal(failed!.status, 'failed');
    assert.equal(failed!.result?.testsPassed, 0);
    assert.equal(failed!.result?.variant, ada!.variant);
    assert.equal(passed!.status, 'passed', passed!.result?.summary);
    assert.equal(passed!.result?.variant, bo!.variant);
  },
);
