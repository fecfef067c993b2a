import { testRedisTarget, uniquePrefix } from '@tether/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys, createRedisConnection } from '../src/redis/index.js';
import { LIST_SCAN_MAX, RunService, RunStore } from '../src/runs/index.js';

/**
 * Listing by metadata against real Redis (on a Redis Cluster too: the
 * metadata indexes are in the tenant's hash slot, written beside its list
 * while the records go to their own slots): pages, pairs ANDed, the status,
 * tenants apart, deleted runs gone from the index, and the bounded scan.
 */
const redis = createRedisConnection({ ...testRedisTarget(), name: 'run-list', onError: () => {} });
afterAll(() => redis.quit());

function deployment() {
  const keys = createKeys(uniquePrefix('list'));
  const store = new RunStore({ redis, keys });
  const service = new RunService({ redis, keys, store });
  return { keys, store, service };
}

const body = (metadata?: Record<string, unknown>) => ({
  input: 'hi',
  model: { provider: 'replay' as const, script: [{ content: 'ok' }] },
  ...(metadata ? { metadata } : {}),
});

describe('RunStore.list by metadata', () => {
  it('pages through the runs whose metadata has every pair, newest first, a tenant at a time', async () => {
    const { keys, store, service } = deployment();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const metadata = { team: 'a', env: i % 2 ? 'prod' : 'dev', n: i };
      // Submitted together (one batch of pipelines per turn), as the API does under load.
      ids.push((await service.submit('acme', body(metadata))).run.id);
    }
    await Promise.all([
      service.submit('acme', body({ team: 'b', env: 'prod' })),
      service.submit('acme', body()),
      service.submit('beta', body({ team: 'a', env: 'prod' })),
      service.submit('acme', body({ team: 'a'.repeat(257) })),
    ]);
    const pages = async (metadata: Record<string, string>, limit: number, tenant = 'acme') => {
      const seen: string[][] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await store.list(tenant, { limit, cursor, metadata });
        seen.push(page.runs.map((run) => run.id));
        if (!page.nextCursor) return seen;
        cursor = page.nextCursor;
      }
    };
    // Newest first is id order: runs made in one millisecond (these often are) share their ids'
    // time part, so among them the random part decides, not the order they were submitted in.
    const newestFirst = [...ids].sort().reverse();
    expect(await pages({ team: 'a' }, 3)).toEqual([
      newestFirst.slice(0, 3),
      newestFirst.slice(3, 6),
      newestFirst.slice(6),
    ]);
    const prod = newestFirst.filter((id) => ids.indexOf(id) % 2 === 1);
    expect((await pages({ team: 'a', env: 'prod' }, 2)).flat()).toEqual(prod);
    expect((await pages({ env: 'prod', team: 'a' }, 10)).flat()).toEqual(prod);
    expect(await pages({ team: 'c' }, 5)).toEqual([[]]);
    // Only strings are indexed: a number, or a value over 256 characters, matches nothing.
    expect(await pages({ n: '1' }, 5)).toEqual([[]]);
    expect(await pages({ team: 'a'.repeat(257) }, 5)).toEqual([[]]);
    expect((await pages({ team: 'a' }, 10, 'beta')).flat()).toHaveLength(1);
    // With the status.
    await service.cancel('acme', ids[1] as string);
    const cancelled = await store.list('acme', { limit: 10, status: 'cancelled', metadata: { team: 'a' } });
    expect(cancelled.runs.map((run) => run.id)).toEqual([ids[1]]);
    // A deleted run leaves its indexes.
    await service.delete('acme', ids[1] as string);
    expect(await redis.zscore(keys.tenantRunsByMetadata('acme', 'team', 'a'), ids[1] as string)).toBeNull();
    expect(await redis.zscore(keys.tenantRunsByMetadata('acme', 'env', 'prod'), ids[1] as string)).toBeNull();
    expect((await pages({ team: 'a' }, 10)).flat()).toEqual(newestFirst.filter((id) => id !== ids[1]));
    await service.close();
  });

  it('reads at most LIST_SCAN_MAX index entries per page, and answers a cursor to go on', async () => {
    const { keys, store, service } = deployment();
    const { run: match } = await service.submit('acme', body({ team: 'a', env: 'prod' }));
    // Many runs of team a in other envs, newer than the match: the pair index scanned is the smaller.
    const others = Array.from({ length: LIST_SCAN_MAX + 50 }, () => body({ team: 'a', env: 'dev' }));
    await Promise.all(others.map((other) => service.submit('acme', other)));
    // A prod index as big as team a's, so the scan walks through the dev runs.
    const prodIndex = keys.tenantRunsByMetadata('acme', 'env', 'prod');
    const teamIndex = keys.tenantRunsByMetadata('acme', 'team', 'a');
    await redis.zunionstore(prodIndex, 2, prodIndex, teamIndex);
    const first = await store.list('acme', { limit: 5, metadata: { team: 'a', env: 'prod' } });
    expect(first.runs).toEqual([]);
    expect(first.nextCursor).not.toBeNull();
    const second = await store.list('acme', {
      limit: 5,
      cursor: first.nextCursor as string,
      metadata: { team: 'a', env: 'prod' },
    });
    expect(second.runs.map((run) => run.id)).toEqual([match.id]);
    expect(second.nextCursor).toBeNull();
    await service.close();
  });

  it('keeps the entry of a run whose record is not written yet, and removes one that is gone for good', async () => {
    const { keys, store, service } = deployment();
    const { run } = await service.submit('acme', body({ team: 'a' }));
    // On a cluster the index entries and the record are written by pipelines of their own: a listing
    // can come between them. The record held back, as if its pipeline had not run yet.
    const record = keys.run(run.id).record;
    const held = (await redis.dumpBuffer(record)) as Buffer;
    await redis.del(record);
    expect((await store.list('acme', { limit: 10 })).runs).toEqual([]);
    expect((await store.list('acme', { limit: 10, metadata: { team: 'a' } })).runs).toEqual([]);
    await redis.restore(record, 0, held);
    // The run is listed once its record is there: the listing took it for late, not gone.
    expect((await store.list('acme', { limit: 10 })).runs.map((listed) => listed.id)).toEqual([run.id]);
    expect(
      (await store.list('acme', { limit: 10, metadata: { team: 'a' } })).runs.map((listed) => listed.id),
    ).toEqual([run.id]);

    // An entry older than INDEX_ENTRY_GRACE_MS with no record (expired) leaves the index as it is met.
    const expired = `run_0000000001${run.id.slice('run_'.length + 10)}`;
    await redis.zadd(keys.tenantRuns('acme'), 0, expired);
    expect((await store.list('acme', { limit: 10 })).runs.map((listed) => listed.id)).toEqual([run.id]);
    expect(await redis.zscore(keys.tenantRuns('acme'), expired)).toBeNull();
    expect(await redis.zscore(keys.tenantRuns('acme'), run.id)).not.toBeNull();
    await service.close();
  });
});
