/**
 * What this worker's sandbox is, checked once at start: the bubblewrap probe
 * (the exact sandbox commands get), the cgroup support, and whether the
 * sandbox user can reach the workspace root. Logged once, and published in
 * Redis so that the API's `/readyz` can show every worker's sandbox.
 */
import { cgroupSupport, probeBwrap, type SandboxMode, sandboxUserFor, unreachableBy } from '@tether/tools';
import type { Logger } from 'pino';
import type { WorkerConfig } from './config.js';

/** The sandbox a worker's `bash` commands actually get. */
export interface SandboxReport {
  requested: SandboxMode;
  /** What commands run under. */
  effective: 'bwrap' | 'none' | 'unavailable';
  /** Why bwrap is not used (auto, none) or cannot be (bwrap). */
  reason?: string;
  /** Under bwrap: a user namespace of the command's own. */
  userNamespace?: boolean;
  /** Under bwrap: the host uid commands run as. */
  uid?: number;
  /** Per-command limits: cgroup v2, v1, or none (rlimits only). */
  cgroups: 'v1' | 'v2' | 'none';
  cgroupReason?: string;
}

/** Probes the sandbox as `config` asks for it. */
export async function checkSandbox(
  config: Pick<WorkerConfig, 'sandbox' | 'sandboxUser' | 'workspaceRoot'>,
): Promise<SandboxReport> {
  const cgroups = await cgroupSupport();
  const limits =
    cgroups.kind === 'none'
      ? { cgroups: 'none' as const, cgroupReason: cgroups.reason }
      : { cgroups: cgroups.kind };
  if (config.sandbox === 'none') {
    return { requested: 'none', effective: 'none', reason: 'TETHER_SANDBOX=none', ...limits };
  }
  const user = sandboxUserFor(config.sandboxUser);
  const [probe, unreachable] = await Promise.all([
    probeBwrap(user),
    unreachableBy(config.workspaceRoot, user),
  ]);
  const problem = !probe.ok ? probe.detail : unreachable;
  if (problem !== undefined) {
    return {
      requested: config.sandbox,
      effective: config.sandbox === 'auto' ? 'none' : 'unavailable',
      reason: problem,
      ...limits,
    };
  }
  return {
    requested: config.sandbox,
    effective: 'bwrap',
    userNamespace: probe.userNamespace,
    ...(probe.uid === undefined ? {} : { uid: probe.uid }),
    ...limits,
  };
}

/** Says once, at start, what the sandbox is; loudly when it is less than bwrap with cgroups. */
export function logSandboxReport(logger: Logger, report: SandboxReport): void {
  const unsafe =
    'unsafe with untrusted models: commands can read and write whatever the worker can, and see its processes';
  if (report.effective === 'bwrap') {
    logger.info(
      { sandbox: report },
      `bash sandbox: bwrap${report.userNamespace ? ', own user namespace' : ''}, uid ${report.uid}, no capabilities`,
    );
  } else if (report.effective === 'unavailable') {
    logger.error(
      { sandbox: report },
      `TETHER_SANDBOX=bwrap but bubblewrap cannot build the sandbox: ${report.reason}; every bash call will fail`,
    );
  } else if (report.requested === 'auto') {
    logger.warn(
      { sandbox: report },
      `TETHER_SANDBOX=auto refused bwrap (${report.reason}): bash runs without a sandbox, ${unsafe}`,
    );
  } else {
    logger.warn({ sandbox: report }, `TETHER_SANDBOX=none: bash runs without a sandbox, ${unsafe}`);
  }
  if (report.cgroups === 'none') {
    logger.warn(
      { sandbox: report },
      `no cgroup limits for bash commands (${report.cgroupReason}): no process-count or memory limit per command, rlimits only`,
    );
  }
}
