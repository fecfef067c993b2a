/**
 * `client.webhooks` and `tether webhooks add|ls|rm|deliveries` against the
 * fake API on a real port: the requests they send, what they print, tenancy
 * as typed errors.
 */
import type { WebhookDelivery } from '@tether/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TetherClient } from '../client.js';
import { TetherNotFoundError } from '../errors.js';
import { FakeApi } from '../testing/fake-api.js';
import { KeyboardInput, RecordingOutput } from '../testing/terminal.js';
import { runCli } from './program.js';

let api: FakeApi;

beforeEach(async () => {
  api = new FakeApi();
  api.keys.set('key-a', 'tenant-a');
  api.keys.set('key-b', 'tenant-b');
  await api.start();
});

afterEach(async () => {
  await api.close();
});

async function cli(args: string[], key = 'key-a') {
  const stdout = new RecordingOutput(false);
  const stderr = new RecordingOutput(false);
  const env = { TETHER_URL: api.baseUrl, TETHER_API_KEY: key, NO_COLOR: '1' };
  const code = await runCli(args, { stdout, stderr, stdin: new KeyboardInput(false), env });
  return { code, out: stdout.plain, err: stderr.plain };
}

const delivery = (n: number, status: WebhookDelivery['status']): WebhookDelivery => ({
  id: `whd_${String(n).padStart(26, '0')}`,
  messageId: `whd_${String(n).padStart(26, '0')}`,
  type: 'run.failed',
  runId: `run_${String(n).padStart(26, '0')}`,
  eventId: `${n}-0`,
  status,
  attempts: status === 'pending' ? 3 : 1,
  ...(status === 'pending'
    ? { lastStatus: 502, lastError: 'HTTP 502: bad gateway', nextAttemptAt: '2099-01-01T00:00:00.000Z' }
    : { lastStatus: 200 }),
  createdAt: '2025-01-01T00:00:00.000Z',
});

describe('client.webhooks', () => {
  it('creates, lists, reads, changes, rotates, pages deliveries, redelivers and deletes, on the routes of the contract', async () => {
    const client = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a' });
    const created = await client.webhooks.create({
      url: 'https://hooks.example.com/in',
      events: ['run.failed'],
    });
    expect(created).toMatchObject({ url: 'https://hooks.example.com/in', events: ['run.failed'] });
    expect(created.secret).toMatch(/^whsec_/);
    expect(api.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/webhooks' });
    expect((await client.webhooks.list()).data.map((w) => w.id)).toEqual([created.id]);
    expect(await client.webhooks.get(created.id)).not.toHaveProperty('secret');
    expect(await client.webhooks.update(created.id, { enabled: false })).toMatchObject({ enabled: false });
    expect(api.requests.at(-1)).toMatchObject({ method: 'PATCH', path: `/v1/webhooks/${created.id}` });
    const rotated = await client.webhooks.rotateSecret(created.id);
    expect(rotated.secret).not.toBe(created.secret);
    api.webhooks.deliveries.set(created.id, [delivery(2, 'pending'), delivery(1, 'delivered')]);
    const page = await client.webhooks.deliveries(created.id, { limit: 1 });
    expect(page.data.map((d) => d.id)).toEqual([delivery(2, 'pending').id]);
    expect(Object.fromEntries(api.requests.at(-1)?.query ?? [])).toEqual({ limit: '1' });
    const next = await client.webhooks.deliveries(created.id, { cursor: page.nextCursor ?? undefined });
    expect(next.data.map((d) => d.id)).toEqual([delivery(1, 'delivered').id]);
    const again = await client.webhooks.redeliver(created.id, delivery(1, 'delivered').id);
    expect(again).toMatchObject({ status: 'pending', redeliveryOf: delivery(1, 'delivered').id });
    const other = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-b' });
    await expect(other.webhooks.get(created.id)).rejects.toBeInstanceOf(TetherNotFoundError);
    await client.webhooks.delete(created.id);
    await expect(client.webhooks.delete(created.id)).rejects.toBeInstanceOf(TetherNotFoundError);
  });
});

describe('tether webhooks', () => {
  it('adds an endpoint for the events given (every one by default) and prints its secret once', async () => {
    const added = await cli([
      'webhooks',
      'add',
      'https://hooks.example.com/in',
      '-e',
      'run.failed',
      '-e',
      'clarify.requested',
    ]);
    expect(added.code).toBe(0);
    expect(added.out).toMatch(
      /^Added webhook whk_\S+ for run\.failed, clarify\.requested → https:\/\/hooks\.example\.com\/in\n/,
    );
    expect(added.out).toMatch(/Signing secret \(shown only now\): whsec_\S+\n$/);
    const all = await cli(['webhooks', 'add', 'https://hooks.example.com/all', '--json']);
    expect(JSON.parse(all.out)).toMatchObject({ events: ['*'] });
    const listed = await cli(['webhooks', 'ls']);
    expect(listed.out.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^whk_\S+ {2}enabled {2}https:\/\/hooks\.example\.com\/in {2}run\.failed,clarify\.requested$/,
      ),
      expect.stringMatching(/^whk_\S+ {2}enabled {2}https:\/\/hooks\.example\.com\/all {2}\*$/),
    ]);
    expect((await cli(['webhooks', 'ls'], 'key-b')).out).toContain('No webhooks yet');
  });

  it('lists deliveries with their status, attempts, last answer and next retry; rm deletes, and an unknown id fails', async () => {
    const { out } = await cli(['webhooks', 'add', 'https://hooks.example.com/in', '--json']);
    const { id } = JSON.parse(out) as { id: string };
    api.webhooks.deliveries.set(id, [delivery(2, 'pending'), delivery(1, 'delivered')]);
    const shown = await cli(['webhooks', 'deliveries', id, '--limit', '1']);
    expect(shown.out).toContain(`${delivery(2, 'pending').id}  pending    run.failed`);
    expect(shown.out).toContain('3 attempts 502 next');
    expect(shown.out).toContain('HTTP 502: bad gateway');
    expect(shown.out).toContain(`more: tether webhooks deliveries ${id} --cursor 1`);
    const second = await cli(['webhooks', 'deliveries', id, '--cursor', '1']);
    expect(second.out).toContain(`${delivery(1, 'delivered').id}  delivered  run.failed`);
    expect((await cli(['webhooks', 'deliveries', id, '--limit', 'x'])).code).toBe(2);
    expect(await cli(['webhooks', 'rm', id])).toMatchObject({ code: 0, out: `Deleted webhook ${id}.\n` });
    const gone = await cli(['webhooks', 'rm', id]);
    expect(gone.code).toBe(1);
    expect(gone.err).toContain('ERR_WEBHOOK_NOT_FOUND');
  });
});
