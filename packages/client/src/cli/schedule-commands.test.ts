/**
 * `client.schedules` and `tether schedules add|ls|pause|resume|trigger|rm` against the fake API on
 * a real port: the requests they send, what they print, usage errors, another tenant's 404. The
 * real routes are apps/api/test/schedules.int.test.ts.
 */
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

describe('client.schedules', () => {
  it('creates, lists, reads, pauses, resumes, triggers, pages runs and deletes, on the routes of the contract', async () => {
    const client = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-a' });
    const created = await client.schedules.create({
      name: 'nightly',
      cron: '0 3 * * *',
      run: { input: 'triage' },
    });
    expect(created).toMatchObject({ id: 'sch_nightly', cron: '0 3 * * *', paused: false });
    expect(api.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/schedules' });
    expect((await client.schedules.list()).data.map((s) => s.name)).toEqual(['nightly']);
    expect((await client.schedules.pause('nightly')).paused).toBe(true);
    expect(api.requests.at(-1)).toMatchObject({ method: 'POST', path: '/v1/schedules/nightly/pause' });
    expect((await client.schedules.resume('nightly')).paused).toBe(false);
    expect((await client.schedules.trigger('nightly')).runId).toMatch(/^run_/);
    expect(await client.schedules.runs('nightly', { limit: 5 })).toEqual({ data: [], nextCursor: null });
    expect(api.requests.at(-1)).toMatchObject({ method: 'GET', path: '/v1/schedules/nightly/runs' });
    const other = new TetherClient({ baseUrl: api.baseUrl, apiKey: 'key-b' });
    await expect(other.schedules.get('nightly')).rejects.toBeInstanceOf(TetherNotFoundError);
    await client.schedules.delete('nightly');
    await expect(client.schedules.get('nightly')).rejects.toBeInstanceOf(TetherNotFoundError);
  });
});

describe('tether schedules', () => {
  it('adds with the flags as the body, lists, pauses, resumes, triggers and removes', async () => {
    const added = await cli([
      'schedules',
      'add',
      'nightly',
      'Triage the new issues',
      '--cron',
      '0 3 * * *',
      '--tz',
      'Europe/Paris',
      '--overlap',
      'cancel_previous',
      '--catch-up',
      'none',
      '-t',
      'base',
      '-m',
      'fast',
    ]);
    expect(added.code, added.err).toBe(0);
    expect(api.requests.at(-1)?.body).toEqual({
      name: 'nightly',
      cron: '0 3 * * *',
      timezone: 'Europe/Paris',
      overlap: 'cancel_previous',
      catchUp: 'none',
      run: { input: 'Triage the new issues', model: { profile: 'fast' }, toolsets: ['base'] },
    });
    expect(added.out).toMatch(
      /^Added schedule nightly {2}active {2}cron "0 3 \* \* \*" Europe\/Paris {2}next /,
    );

    const listed = await cli(['schedules', 'ls']);
    expect(listed.out).toMatch(/nightly {2}active .* no run yet/);
    expect((await cli(['schedules', 'pause', 'nightly'])).out).toMatch(/^Paused nightly {2}paused .* next —/);
    expect((await cli(['schedules', 'resume', 'nightly'])).out).toMatch(/^Resumed nightly {2}active/);
    expect((await cli(['schedules', 'trigger', 'nightly'])).out).toMatch(/^Triggered nightly: run run_\w+/);
    const foreign = await cli(['schedules', 'trigger', 'nightly'], 'key-b');
    expect(foreign.code).not.toBe(0);
    expect(foreign.err).toMatch(/No schedule nightly/);
    expect((await cli(['schedules', 'rm', 'nightly'])).out).toBe(
      'Deleted schedule nightly; its runs stay.\n',
    );
    expect((await cli(['schedules', 'ls'])).out).toMatch(/No schedules yet/);
  });

  it('refuses both or neither of --cron and --every, and a policy it does not know, before any request', async () => {
    const before = api.requests.length;
    for (const args of [
      ['schedules', 'add', 'x', 'task'],
      ['schedules', 'add', 'x', 'task', '--cron', '* * * * *', '--every', '1m'],
      ['schedules', 'add', 'x', 'task', '--every', '1m', '--overlap', 'sometimes'],
    ]) {
      const result = await cli(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.err).toMatch(/--cron|--every|--overlap/);
    }
    expect(api.requests.length).toBe(before);
  });
});
