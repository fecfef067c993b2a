/**
 * The schedule routes of the fake API (`/v1/schedules`), in memory: enough of the contract for
 * the SDK and the CLI (201, the list, 404 for another tenant's, pause, resume, trigger, a page of
 * runs seeded by the test). The real routes are tested in apps/api. Test-only.
 */
import type { ServerResponse } from 'node:http';
import type { CreateScheduleBody, Run, Schedule } from '@tether/protocol';

export class FakeSchedules {
  /** Schedules by tenant and name. */
  readonly schedules = new Map<string, Schedule & { tenant: string }>();
  /** Runs by schedule name, newest first (seeded by the test). */
  readonly runs = new Map<string, Run[]>();
  #seq = 0;

  /** Answers a schedule route (`parts` after `v1/schedules`), or returns false for another route. */
  handle(
    method: string,
    parts: readonly string[],
    url: URL,
    body: unknown,
    tenant: string,
    res: ServerResponse,
  ): boolean {
    const [name, action] = parts;
    const view = ({ tenant: _, ...schedule }: Schedule & { tenant: string }) => schedule;
    if (name === undefined) {
      if (method === 'GET') {
        const data = [...this.schedules.values()].filter((s) => s.tenant === tenant).map(view);
        send(res, 200, { data });
        return true;
      }
      if (method !== 'POST') return false;
      const given = body as CreateScheduleBody;
      const at = new Date(Date.UTC(2025, 0, 1)).toISOString();
      const schedule = {
        id: `sch_${given.name}`,
        name: given.name,
        ...(given.cron ? { cron: given.cron } : {}),
        ...(given.every ? { every: given.every } : {}),
        timezone: given.timezone ?? 'UTC',
        overlap: given.overlap ?? 'skip',
        catchUp: given.catchUp ?? 'one',
        paused: false,
        run: given.run,
        nextRunAt: '2099-01-01T03:00:00.000Z',
        lastRunAt: null,
        lastRunId: null,
        lastStatus: null,
        lastSkippedAt: null,
        createdAt: at,
        updatedAt: at,
        tenant,
      } satisfies Schedule & { tenant: string };
      this.schedules.set(`${tenant}/${given.name}`, schedule);
      send(res, 201, view(schedule));
      return true;
    }
    const schedule = this.schedules.get(`${tenant}/${name}`);
    if (!schedule) {
      send(res, 404, { error: { code: 'ERR_SCHEDULE_NOT_FOUND', message: `No schedule ${name}.` } });
      return true;
    }
    if (action === undefined && method === 'GET') send(res, 200, view(schedule));
    else if (action === undefined && method === 'DELETE') {
      this.schedules.delete(`${tenant}/${name}`);
      res.writeHead(204).end();
    } else if ((action === 'pause' || action === 'resume') && method === 'POST') {
      schedule.paused = action === 'pause';
      schedule.nextRunAt = schedule.paused ? null : '2099-01-01T03:00:00.000Z';
      send(res, 200, view(schedule));
    } else if (action === 'trigger' && method === 'POST') {
      send(res, 202, { runId: `run_${String(++this.#seq).padStart(26, '0')}` });
    } else if (action === 'runs' && method === 'GET') {
      const all = this.runs.get(name) ?? [];
      const limit = Number(url.searchParams.get('limit') ?? '20');
      const offset = Number(url.searchParams.get('cursor') ?? '0');
      send(res, 200, {
        data: all.slice(offset, offset + limit),
        nextCursor: offset + limit < all.length ? String(offset + limit) : null,
      });
    } else return false;
    return true;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
