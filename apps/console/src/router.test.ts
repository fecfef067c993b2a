import { describe, expect, it } from 'vitest';
import { filesHref, hrefOf, parseRoute } from './router.js';

describe('the routes', () => {
  it("reads a run's timeline and its Files tab, a folder or file of it, each segment decoded", () => {
    expect(parseRoute('/console/runs/run_1')).toEqual({
      page: 'run',
      id: 'run_1',
      tab: 'timeline',
      path: '',
    });
    expect(parseRoute('/console/runs/run_1/files')).toEqual({
      page: 'run',
      id: 'run_1',
      tab: 'files',
      path: '',
    });
    expect(parseRoute('/console/runs/run_1/files/')).toEqual({
      page: 'run',
      id: 'run_1',
      tab: 'files',
      path: '',
    });
    expect(parseRoute('/console/runs/run_1/files/docs/a%20b.md')).toEqual({
      page: 'run',
      id: 'run_1',
      tab: 'files',
      path: 'docs/a b.md',
    });
    expect(parseRoute('/console/runs/run_1/files/%E0%A4%A')).toEqual({
      page: 'missing',
      path: '/console/runs/run_1/files/%E0%A4%A',
    });
    expect(parseRoute('/console/runs/run_1/other')).toEqual({
      page: 'missing',
      path: '/console/runs/run_1/other',
    });
  });

  it('writes the links that it reads back', () => {
    for (const path of ['', 'README.md', 'docs/a b.md', 'é/#?.txt']) {
      const href = filesHref('run_1', path);
      expect(parseRoute(href)).toEqual({ page: 'run', id: 'run_1', tab: 'files', path });
      expect(hrefOf({ page: 'run', id: 'run_1', tab: 'files', path })).toBe(href);
    }
    expect(filesHref('run_1', 'docs/a b.md')).toBe('/console/runs/run_1/files/docs/a%20b.md');
    expect(hrefOf({ page: 'run', id: 'run_1' })).toBe('/console/runs/run_1');
  });

  it('reads the New run page before a run id ("new" is none), and writes its link', () => {
    expect(parseRoute('/console/runs/new')).toEqual({ page: 'new-run' });
    expect(parseRoute('/console/runs/new/')).toEqual({ page: 'new-run' });
    expect(hrefOf({ page: 'new-run' })).toBe('/console/runs/new');
    expect(parseRoute(hrefOf({ page: 'new-run' }))).toEqual({ page: 'new-run' });
  });
});

describe('the sections of the navigation', () => {
  it('reads and writes each one, with or without a trailing slash, and nothing else as one', () => {
    for (const page of ['webhooks', 'schedules', 'usage', 'skills', 'memory', 'settings'] as const) {
      expect(hrefOf({ page })).toBe(`/console/${page}`);
      expect(parseRoute(`/console/${page}`)).toEqual({ page });
      expect(parseRoute(`/console/${page}/`)).toEqual({ page });
    }
    expect(parseRoute('/console/webhook')).toEqual({ page: 'missing', path: '/console/webhook' });
    expect(parseRoute('/console/settings/x')).toEqual({ page: 'missing', path: '/console/settings/x' });
  });
});
