/**
 * No Docker engine runs where these tests run, so the compose file's structure is checked
 * instead: the services, volumes and health checks, and that every variable the apps read is
 * either set for the service or has a default in the app's config.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadApiConfig } from '../apps/api/src/config.js';
import { loadWorkerConfig } from '../apps/worker/src/config.js';

const root = new URL('../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

interface Service {
  image?: string;
  profiles?: string[];
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}
interface Compose {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
}
const compose = parse(read('docker-compose.yml'), { merge: true }) as Compose;
const services = compose.services;

/**
 * The compose file as docker compose reads it with `env` as the environment:
 * `$$`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}` and
 * `${VAR?error}` in every string, as compose interpolates them.
 */
function interpolated(env: Record<string, string>): Compose {
  const substitute = (text: string) =>
    text.replace(
      /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g,
      (whole, name, colon, op, arg) => {
        if (whole === '$$') return '$';
        const value = env[name as string];
        const missing = value === undefined || (colon === ':' && value === '');
        if (op === '?' && missing) throw new Error(`required variable ${name} is missing a value: ${arg}`);
        if (op === '-' && missing) return arg as string;
        return value ?? '';
      },
    );
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return substitute(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, walk(item)]));
    }
    return value;
  };
  return walk(compose) as Compose;
}

const KEY = 'a3f1c0de9b8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6';
const PASSWORD = '0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978';
const SECRETS = { TETHER_API_KEYS: `acme:${KEY}`, REDIS_PASSWORD: PASSWORD };

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
  'TETHER_WORKER_SHARDS', // every shard when unset
  'REDIS_CLUSTER_NODES', // one Redis server (REDIS_URL) when unset
  'REDIS_PASSWORD', // compose gives it in REDIS_URL; unset means none beyond the URL's
  'TETHER_MCP_SERVERS', // the operator's stdio MCP servers: none when unset
  'TETHER_TENANT_BUDGETS', // the operator's budgets per tenant: none when unset
]);

describe('docker-compose.yml', () => {
  it('has redis, api and worker, prometheus and grafana in the observability profile, and their volumes', () => {
    expect(Object.keys(services).sort()).toEqual(['api', 'grafana', 'prometheus', 'redis', 'worker']);
    const inProfile = Object.keys(services).filter((name) => services[name]?.profiles !== undefined);
    expect(inProfile.sort()).toEqual(['grafana', 'prometheus']);
    for (const name of inProfile) expect(services[name]?.profiles).toEqual(['observability']);
    expect(Object.keys(compose.volumes).sort()).toEqual([
      'grafana-data',
      'prometheus-data',
      'redis-data',
      'workspaces',
    ]);
  });

  it('runs Redis with AOF everysec, noeviction, a password and a health check that uses it', () => {
    const command = (services.redis?.command ?? []).join(' ');
    expect(command).toContain('--appendonly yes');
    expect(command).toContain('--appendfsync everysec');
    expect(command).toContain('--maxmemory-policy noeviction');
    // redis-cli answers NOAUTH with exit code 0: the check must look for the PONG.
    expect(services.redis?.healthcheck?.test).toEqual(['CMD-SHELL', 'redis-cli ping | grep -q PONG']);
    expect(services.redis?.volumes).toContain('redis-data:/data');
    const redis = interpolated(SECRETS).services.redis as Service;
    const args = redis.command ?? [];
    expect(args[args.indexOf('--requirepass') + 1]).toBe(PASSWORD);
    expect(redis.environment?.REDISCLI_AUTH).toBe(PASSWORD);
  });

  it('mounts the shared workspaces volume in the API and every worker, at TETHER_WORKSPACE_ROOT', () => {
    for (const name of ['api', 'worker']) {
      const service = services[name] as Service;
      expect(service.volumes).toContain(`workspaces:${service.environment?.TETHER_WORKSPACE_ROOT}`);
      expect(interpolated(SECRETS).services[name]?.environment?.REDIS_URL).toBe(
        `redis://:${PASSWORD}@redis:6379`,
      );
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
    const shared = variables('packages/config/src/config.ts');
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

  it('runs the workers with TETHER_SANDBOX=bwrap: a sandbox that cannot start refuses bash, never runs it bare', () => {
    const worker = loadWorkerConfig(interpolated(SECRETS).services.worker?.environment);
    expect(worker.sandbox).toBe('bwrap');
    // Still the operator's to change, as every default here.
    const none = interpolated({ ...SECRETS, TETHER_SANDBOX: 'none' }).services.worker?.environment;
    expect(loadWorkerConfig(none).sandbox).toBe('none');
    // `auto` stays the default of the worker itself (pnpm start, library use).
    expect(loadWorkerConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).sandbox).toBe('auto');
  });

  it('refuses to start without TETHER_API_KEYS or REDIS_PASSWORD, saying how to make one', () => {
    expect(() => interpolated({ REDIS_PASSWORD: PASSWORD })).toThrow(
      /TETHER_API_KEYS .*set TETHER_API_KEYS=tenant:key.*openssl rand -hex 24/,
    );
    expect(() => interpolated({ REDIS_PASSWORD: PASSWORD, TETHER_API_KEYS: '' })).toThrow(/TETHER_API_KEYS/);
    expect(() => interpolated({ TETHER_API_KEYS: `acme:${KEY}` })).toThrow(
      /REDIS_PASSWORD .*openssl rand -hex 24/,
    );
    expect(read('docker-compose.yml')).not.toMatch(/TETHER_API_KEYS:-|REDIS_PASSWORD:-|tether-dev-key/);
  });

  it('with the secrets set: keys required, replay off, Redis behind its password, the port on loopback', () => {
    const { services: set } = interpolated(SECRETS);
    const api = loadApiConfig(set.api?.environment);
    expect(api.apiKeys.map((key) => key.tenant)).toEqual(['acme']);
    expect(api.host).toBe('0.0.0.0');
    expect(api.allowReplay).toBe(false);
    const worker = loadWorkerConfig(set.worker?.environment);
    expect(worker.allowReplay).toBe(false);
    for (const config of [api, worker]) {
      const url = new URL(config.redisUrl);
      expect([url.hostname, url.port, url.password]).toEqual(['redis', '6379', PASSWORD]);
    }
    expect(set.api?.ports).toEqual(['127.0.0.1:3000:3000']);
    // Each default is the operator's to change.
    const open = interpolated({
      ...SECRETS,
      TETHER_BIND: '0.0.0.0',
      TETHER_PORT: '8080',
      TETHER_ALLOW_REPLAY: '1',
    });
    expect(open.services.api?.ports).toEqual(['0.0.0.0:8080:3000']);
    expect(loadApiConfig(open.services.api?.environment).allowReplay).toBe(true);
  });

  it('has a Dockerfile that installs bubblewrap and runs as a non-root user', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile).toMatch(/apt-get install[^\n]*bubblewrap/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^FROM .* AS build$/m);
    expect(dockerfile).toContain('pnpm install --frozen-lockfile');
    // Every workspace package's manifest is in place before the install, or its dependencies are missing.
    for (const dir of ['apps', 'packages']) {
      for (const name of readdirSync(fileURLToPath(new URL(`${dir}/`, root)))) {
        if (!existsSync(new URL(`${dir}/${name}/package.json`, root))) continue;
        expect(dockerfile).toContain(`COPY ${dir}/${name}/package.json ${dir}/${name}/`);
      }
    }
    // Every patch a dependency needs (pnpm-workspace.yaml's patchedDependencies) is in place before it.
    const install = dockerfile.indexOf('pnpm install --frozen-lockfile');
    const workspace = read('pnpm-workspace.yaml');
    if (workspace.includes('patchedDependencies:')) {
      expect(dockerfile.indexOf('COPY patches patches')).toBeGreaterThan(-1);
      expect(dockerfile.indexOf('COPY patches patches')).toBeLessThan(install);
    }
    // No key, password or replay switch baked into the image.
    const instructions = dockerfile
      .split('\n')
      .filter((line) => !line.trimStart().startsWith('#'))
      .join('\n');
    expect(instructions).not.toMatch(
      /TETHER_API_KEYS|REDIS_PASSWORD|REDIS_URL|TETHER_ALLOW_REPLAY|TETHER_TOKEN_SECRET/,
    );
  });
});

/** Every metric name the code defines (`name: 'tether_…'`), for the dashboard's queries. */
function definedMetrics(): Set<string> {
  const files = [
    'apps/api/src/plugins/metrics.ts',
    'apps/worker/src/metrics.ts',
    'packages/telemetry/src/queue-counts.ts',
    'packages/telemetry/src/run-metrics.ts',
  ];
  const names = new Set<string>();
  for (const file of files) {
    for (const match of read(file).matchAll(/name: '(tether_[a-z_]+)'/g)) names.add(match[1] as string);
  }
  return names;
}

describe('observability (deploy/)', () => {
  const prometheus = parse(read('deploy/prometheus/prometheus.yml')) as {
    scrape_configs: {
      job_name: string;
      metrics_path: string;
      dns_sd_configs: { names: string[]; type: string; port: number }[];
    }[];
  };

  it('mounts files that exist, and publishes Prometheus and Grafana on loopback by default', () => {
    for (const name of ['prometheus', 'grafana']) {
      for (const volume of services[name]?.volumes ?? []) {
        const source = volume.split(':')[0] as string;
        if (source.startsWith('./')) expect(existsSync(new URL(source, root)), volume).toBe(true);
      }
    }
    const set = interpolated(SECRETS).services;
    expect(set.prometheus?.ports).toEqual(['127.0.0.1:9090:9090']);
    expect(set.grafana?.ports).toEqual(['127.0.0.1:3001:3000']);
  });

  it('scrapes the API on its port and every worker on the metrics port compose gives it', () => {
    const jobs = Object.fromEntries(prometheus.scrape_configs.map((job) => [job.job_name, job]));
    expect(Object.keys(jobs).sort()).toEqual(['tether-api', 'tether-worker']);
    const worker = loadWorkerConfig(interpolated(SECRETS).services.worker?.environment);
    expect(jobs['tether-worker']?.dns_sd_configs).toEqual([
      { names: ['worker'], type: 'A', port: worker.metricsPort, refresh_interval: '30s' },
    ]);
    const api = loadApiConfig(interpolated(SECRETS).services.api?.environment);
    expect(jobs['tether-api']?.dns_sd_configs?.[0]).toMatchObject({ names: ['api'], port: api.port });
    for (const job of prometheus.scrape_configs) expect(job.metrics_path).toBe('/metrics');
  });

  it("provisions Grafana with the compose Prometheus and the dashboard's folder", () => {
    const datasources = parse(read('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { uid: string; type: string; url: string }[];
    };
    expect(datasources.datasources).toEqual([
      expect.objectContaining({ uid: 'prometheus', type: 'prometheus', url: 'http://prometheus:9090' }),
    ]);
    const dashboards = parse(read('deploy/grafana/provisioning/dashboards/tether.yml')) as {
      providers: { options: { path: string } }[];
    };
    const mounted = (services.grafana?.volumes ?? []).map((volume) => volume.split(':'));
    expect(mounted).toContainEqual([
      './deploy/grafana/dashboards',
      dashboards.providers[0]?.options.path,
      'ro',
    ]);
  });

  it('has a dashboard whose every query is on metrics the code defines, covering each of the issue', () => {
    const dashboard = JSON.parse(read('deploy/grafana/dashboards/tether.json')) as {
      uid: string;
      panels: { type: string; datasource?: { uid: string }; targets?: { expr: string }[] }[];
    };
    const defined = definedMetrics();
    const used = new Set<string>();
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      expect(panel.datasource?.uid).toBe('prometheus');
      for (const target of panel.targets ?? []) {
        for (const match of target.expr.matchAll(/tether_[a-z_]+/g)) {
          used.add(match[0].replace(/_(bucket|sum|count)$/, ''));
        }
      }
    }
    expect([...used].filter((name) => !defined.has(name))).toEqual([]);
    for (const name of [
      'tether_runs_finished_total',
      'tether_run_duration_seconds',
      'tether_attempts_total',
      'tether_tool_calls_total',
      'tether_tool_duration_seconds',
      'tether_model_requests_total',
      'tether_model_latency_seconds',
      'tether_model_time_to_first_token_seconds',
      'tether_tokens_total',
      'tether_clarify_wait_seconds',
      'tether_queue_jobs',
      'tether_webhook_deliveries_total',
      'tether_sandbox_mode',
    ]) {
      expect(used, name).toContain(name);
    }
  });
});
