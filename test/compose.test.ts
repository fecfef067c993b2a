/**
 * No Docker engine runs where these tests run, so the compose file's structure is checked
 * instead: the services, volumes and health checks, and that every variable the apps read is
 * either set for the service or has a default in the app's config.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = new URL('../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const services = compose.services;

/** Variables a config file reads, with whether the reader gives them a default. */
function variables(path: string): { name: string; defaulted: boolean }[] {
  const source = read(path);
  const found: { name: string; defaulted: boolean }[] = [];
  for (const match of source.matchAll(/reader\.(\w+)\(\s*'([A-Z][A-Z0-9_]+)'/g)) {
    found.push({ name: match[2] as string, defaulted: match[1] !== 'optional' });
  }
  for (const match of source.matchAll(/value\('([A-Z][A-Z0-9_]+)'\)/g)) {
    found.push({ name: match[1] as string, defaulted: false });
  }
  return found;
}

/** Variables that are optional by design: unset has a meaning, documented in docs/. */
const OPTIONAL = new Set([
  'HOST', // the API binds 0.0.0.0 in compose; unset means 127.0.0.1
  'TETHER_TOKEN_SECRET', // derived from the API keys when unset
  'TETHER_DEFAULT_MODEL_PROFILE',
]);

describe('docker-compose.yml', () => {
  it('has redis, api and worker, and the volumes they use', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'redis', 'worker']);
    expect(Object.keys(compose.volumes).sort()).toEqual(['redis-data', 'workspaces']);
  });

  it('runs Redis with AOF everysec, noeviction and a health check', () => {
    const command = (services.redis?.command ?? []).join(' ');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--appendfsync everysec');
    expect(command).toContain('--maxmemory-policy noeviction');
    expect(services.redis?.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
    expect(services.redis?.volumes).toContain('redis-data:/data');
  });

  it('mounts the shared workspaces volume in the API and every worker, at TETHER_WORKSPACE_ROOT', () => {
    for (const name of ['api', 'worker']) {
      const service = services[name] as Service;
      expect(service.volumes).toContain(`workspaces:${service.environment?.TETHER_WORKSPACE_ROOT}`);
      expect(service.environment?.REDIS_URL).toBe('redis://redis:6379');
      expect(service.depends_on?.redis?.condition).toBe('service_healthy');
    }
  });

  it('builds one image and runs the built entry points', () => {
    expect(services.api?.build).toBe('.');
    expect(services.worker?.image).toBe(services.api?.image);
    expect(services.api?.command).toEqual(['node', 'apps/api/dist/server.js']);
    expect(services.worker?.command).toEqual(['node', '--max-semi-space-size=2', 'apps/worker/dist/main.js']);
    expect(services.api?.healthcheck?.test.join(' ')).toContain('/readyz');
    // The API must listen beyond the container's loopback, which it only does with API keys.
    expect(services.api?.environment?.HOST).toBe('0.0.0.0');
    expect(services.api?.environment?.TETHER_API_KEYS).toBeTruthy();
    // Scaling with --scale worker=N needs no fixed container name or host port on the worker.
    expect(services.worker).not.toHaveProperty('container_name');
    expect(services.worker?.ports).toBeUndefined();
  });

  it('sets or defaults every variable the apps read', () => {
    const shared = variables('packages/queue/src/config.ts');
    const profiles = variables('packages/agent/src/providers/model-profiles.ts');
    const byService: Record<string, { name: string; defaulted: boolean }[]> = {
      api: [...shared, ...profiles, ...variables('apps/api/src/config.ts')],
      worker: [...shared, ...profiles, ...variables('apps/worker/src/config.ts')],
    };
    for (const [name, vars] of Object.entries(byService)) {
      expect(vars.length).toBeGreaterThan(10);
      const environment = services[name]?.environment ?? {};
      const missing = vars.filter((v) => !v.defaulted && !(v.name in environment) && !OPTIONAL.has(v.name));
      expect(missing.map((v) => `${name}: ${v.name}`)).toEqual([]);
    }
  });

  it('has a Dockerfile that installs bubblewrap and runs as a non-root user', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/apt-get install[^\n]*bubblewrap/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^FROM .* AS build$/m);
    expect(dockerfile).toContain('pnpm install --frozen-lockfile');
  });
});
