import { TenantSlots } from '@tether/store/tenant-slots';
import { describe, expect, it } from 'vitest';
import { call, type Deployment, TENANT, until, useDeployments } from './harness.js';

const deploy = useDeployments();
const OTHER = 'tenant-b';

/** A run that takes a while: a command longer than the test lock (2 s), so its slot's lease must be renewed. */
const slowScript = (seconds: number) => [
  { toolCalls: [call('bash', { command: `sleep ${seconds}` })] },
  { content: 'done' },
];

/** The tenant's slots as the workers see them (the cap does not matter for reading). */
function slotsOf(d: Deployment): TenantSlots {
  return new TenantSlots({ redis: d.redis, keys: d.keys, cap: 1, leaseMs: 2_000 });
}

async function statuses(d: Deployment, runIds: string[]): Promise<string[]> {
  return (await d.store.getMany(runIds)).map((run) => run?.status ?? 'gone');
}

const count = (values: string[], wanted: string) => values.filter((value) => value === wanted).length;

/** Submits `script` for `tenant` until its run lands in queue shard `shard`; the others are cancelled. */
async function submitToShard(
  d: Deployment,
  tenant: string,
  shard: number,
  script: unknown[],
): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const { run } = await d.service.submit(tenant, {
      input: 'test run',
      model: { provider: 'replay', script: script as never },
    });
    if (d.keys.shardOf(run.id) === shard) return run.id;
    await d.service.cancel(tenant, run.id);
  }
  throw new Error(`no run landed in shard ${shard}`);
}

describe('TETHER_TENANT_MAX_RUNNING', () => {
  it("never runs more than the cap of one tenant at once over two workers, and holds no other tenant's runs back", async () => {
    const d = await deploy('tenant-cap');
    const env = { TETHER_TENANT_MAX_RUNNING: '2', TETHER_WORKER_CONCURRENCY: '4' };
    await Promise.all([d.startWorker(env), d.startWorker(env)]);
    const slots = slotsOf(d);
    const capped = await Promise.all(Array.from({ length: 6 }, () => d.submit(slowScript(3))));
    const others: string[] = [];
    let most = 0;
    let mostSlots = 0;
    let mostTogether = 0;
    let othersDoneBefore = false;
    await until(
      async () => {
        const [mine, theirs, held] = await Promise.all([
          statuses(d, capped),
          statuses(d, others),
          slots.running(TENANT),
        ]);
        const running = count(mine, 'running');
        most = Math.max(most, running);
        mostSlots = Math.max(mostSlots, held.length);
        // The other tenant's runs run beside the capped tenant's two.
        if (running === 2) mostTogether = Math.max(mostTogether, running + count(theirs, 'running'));
        // Once the capped tenant fills its slots, the other tenant submits two runs.
        if (running === 2 && others.length === 0) {
          others.push(
            ...(await Promise.all(
              [0, 1].map(
                async () =>
                  (
                    await d.service.submit(OTHER, {
                      input: 'other tenant',
                      model: { provider: 'replay', script: slowScript(1) },
                    })
                  ).run.id,
              ),
            )),
          );
        }
        if (others.length > 0 && count(theirs, 'completed') === 2 && count(mine, 'completed') < 6) {
          othersDoneBefore = true;
        }
        return count(mine, 'completed') === 6 && count(theirs, 'completed') === 2;
      },
      'every run to complete',
      45_000,
    );
    expect(most).toBe(2);
    expect(mostSlots).toBeLessThanOrEqual(2);
    expect(mostTogether).toBe(4);
    expect(othersDoneBefore).toBe(true);
    for (const runId of capped) {
      expect((await d.store.get(runId))?.output).toBe('done');
      // Waiting for a slot leaves the run as it was: one attempt, started once.
      const started = (await d.store.readEvents(runId)).filter((e) => e.type === 'attempt.started');
      expect(started).toHaveLength(1);
    }
    // Every slot given back, nobody left in line.
    const keys = d.keys.tenantSlots(TENANT);
    expect(await d.redis.exists(keys.running, keys.holders, keys.parked)).toBe(0);
  });

  it("crew children count toward their tenant's cap; the parent waiting for them holds no slot", async () => {
    const d = await deploy('tenant-cap-crew');
    // A slot's lease is the lock's (the harness's 2 s): on a loaded machine a late renewal lets it
    // lapse, and the child that lost its slot is stopped and tried again (tenant-lease.int.test.ts),
    // which would blur the counts of who ran when. This test is about who holds slots: a longer lease.
    const env = {
      TETHER_TENANT_MAX_RUNNING: '2',
      TETHER_WORKER_CONCURRENCY: '4',
      TETHER_LOCK_DURATION_MS: '10000',
      TETHER_STALLED_INTERVAL_MS: '5000',
    };
    await Promise.all([d.startWorker(env), d.startWorker(env)]);
    const tasks = ['one', 'two', 'three', 'four', 'five'].map((goal) => ({ goal }));
    const { run } = await d.service.submit(TENANT, {
      input: 'lead the crew',
      toolsets: ['base', 'crew'],
      model: {
        provider: 'replay',
        script: [{ toolCalls: [call('delegate_parallel', { tasks })] }, { content: 'all reported' }],
        children: [{ script: slowScript(3) }],
      } as never,
    });
    await until(
      async () => (await d.store.get(run.id))?.status === 'completed',
      'the parent to complete',
      45_000,
    );
    const children = await d.store.childIds(run.id);
    expect(children).toHaveLength(5);
    expect(await statuses(d, children)).toEqual(Array(5).fill('completed'));
    // Each child ran from its attempt's start to its end, both in Redis's clock (the events' ids):
    // polling their statuses instead reads the runs one after another (on a cluster, node after
    // node) and can see a child that ended as running beside the one that took its slot.
    const spans = await Promise.all(
      children.map(async (id) => {
        const events = await d.store.readEvents(id);
        const at = (type: string) => Number(events.find((e) => e.type === type)?.id.split('-')[0]);
        return { start: at('attempt.started'), end: at('run.completed') };
      }),
    );
    // The most children running at once: an end in the same millisecond as a start comes first
    // (the slot is given back after the end is written, and taken before the start).
    const edges = spans.flatMap(({ start, end }) => [
      { at: start, step: 1 },
      { at: end, step: -1 },
    ]);
    edges.sort((a, b) => a.at - b.at || a.step - b.step);
    let running = 0;
    let most = 0;
    for (const { step } of edges) {
      running += step;
      most = Math.max(most, running);
    }
    // Two children ran at once, never more: the parent, waiting for them, held no slot.
    expect(most).toBe(2);
  });

  it('a run waiting for an answer holds no slot: with a cap of 1, another run of the tenant completes meanwhile', async () => {
    const d = await deploy('tenant-cap-clarify');
    await d.startWorker({ TETHER_TENANT_MAX_RUNNING: '1' });
    const waiting = await d.submit(
      [
        { toolCalls: [call('clarify', { question: 'Which colour?', choices: ['red', 'blue'] })] },
        { content: 'red it is' },
      ],
      { clarify: { timeoutMs: 60_000 } },
    );
    const requested = await d.waitForEvent(waiting, 'clarify.requested');
    const other = await d.submit([{ content: 'second done' }]);
    await d.waitForEvent(other, 'run.completed');
    expect((await d.store.get(waiting))?.status).toBe('waiting_for_input');
    await d.service.answer(TENANT, waiting, (requested.data as { requestId: string }).requestId, 'red');
    await d.waitForEvent(waiting, 'run.completed');
  });

  it('a worker killed with -9 while it holds a slot loses it when the lease runs out: the run waiting then goes', async () => {
    // Two shards: the killed worker's run is in shard 0, which no other worker takes, so nobody
    // recovers it or gives its slot back. Only its lease running out frees the slot.
    // It ends with the killed run stranded on purpose (no worker left for its shard): not checked.
    const d = await deploy('tenant-cap-kill', { shards: 2, checkAtEnd: false });
    const env = { TETHER_TENANT_MAX_RUNNING: '1', TETHER_WORKER_CONCURRENCY: '1' };
    const a = await d.startWorker({ ...env, TETHER_WORKER_SHARDS: '0' });
    const slots = slotsOf(d);
    const held = await submitToShard(d, TENANT, 0, slowScript(60));
    await d.waitForEvent(held, 'tool.call');
    expect(await slots.running(TENANT)).toEqual([held]);
    // The run submitted next waits in line on worker B, behind the slot A holds.
    const next = await submitToShard(d, TENANT, 1, [{ content: 'went' }]);
    await d.startWorker({ ...env, TETHER_WORKER_SHARDS: '1' });
    await until(
      async () => (await d.redis.zrange(d.keys.tenantSlots(TENANT).parked, '0', '-1')).includes(next),
      'the next run to wait for a slot',
    );
    a.child.kill('SIGKILL');
    await a.exited;
    const leaseEnd = Number(await d.redis.zscore(d.keys.tenantSlots(TENANT).running, held));
    expect(leaseEnd).toBeGreaterThan(0);
    const started = await d.waitForEvent(next, 'run.started', 30_000);
    await d.waitForEvent(next, 'run.completed');
    // It started only once the dead worker's lease had run out (both times by Redis's clock).
    expect(Number(started.id.split('-')[0])).toBeGreaterThanOrEqual(leaseEnd);
    // Nobody recovered the killed run (no worker takes shard 0): no release freed its slot.
    expect((await d.store.get(held))?.status).toBe('running');
    expect(await slots.running(TENANT)).not.toContain(held);
  });
});
