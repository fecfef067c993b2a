/**
 * What this worker's sandbox is, checked once at start: the bubblewrap probe
 * (the exact sandbox commands get), the cgroup support, and whether the
 * sandbox user can reach the workspace root. Logged once, and published in
 * Redis so that the API's `/readyz` can show every worker's sandbox.
 */
import {
  cgroupSupport,
  probeBwrap,
  type SandboxMode,
  sandboxUserFor,
  unreachableBy,
  unsearchableAncestor,
} from '@tether/tools';
import type { Logger } from 'pino';
import type { WorkerConfig } from './config.js';

/** What lets bubblewrap build the sandbox where it is installed but the probe failed. */
const BWRAP_FIX =
  'allow unprivileged user namespaces (kernel.unprivileged_userns_clone=1; in a container: seccomp=unconfined and apparmor=unconfined), see docs/deploy.md';
/** What gets bubblewrap where it is not installed. */
const INSTALL_FIX = 'install bubblewrap (apt-get install bubblewrap)';

/** What a worker's commands run under: `unavailable` is bwrap asked for and broken (bash refused). */
export const EFFECTIVE_SANDBOXES = ['bwrap', 'none', 'unavailable'] as const;
export type EffectiveSandbox = (typeof EFFECTIVE_SANDBOXES)[number];

/** The sandbox a worker's `bash` commands actually get. */
export interface SandboxReport {
  requested: SandboxMode;
  /** What commands run under. */
  effective: EffectiveSandbox;
  /** Why bwrap is not used (auto, none) or cannot be (bwrap). */
  reason?: string;
  /** What to do about `reason` (`chmod o+x /srv`), when bwrap was asked for and is not used. */
  fix?: string;
  /** The bwrap found on the host, whether or not it works (absent: not installed). */
  bwrap?: string;
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
  const [probe, unreachable, blocked] = await Promise.all([
    probeBwrap(user),
    unreachableBy(config.workspaceRoot, user),
    unsearchableAncestor(config.workspaceRoot, user),
  ]);
  const found = probe.path === undefined ? {} : { bwrap: probe.path };
  const problem = !probe.ok
    ? { reason: probe.detail, fix: probe.path === undefined ? INSTALL_FIX : BWRAP_FIX }
    : unreachable !== undefined && blocked !== undefined
      ? { reason: unreachable, fix: blocked.fix }
      : undefined;
  if (problem !== undefined) {
    return {
      requested: config.sandbox,
      effective: config.sandbox === 'auto' ? 'none' : 'unavailable',
      ...problem,
      ...found,
      ...limits,
    };
  }
  return {
    requested: config.sandbox,
    effective: 'bwrap',
    ...found,
    userNamespace: probe.userNamespace,
    ...(probe.uid === undefined ? {} : { uid: probe.uid }),
    ...limits,
  };
}

/**
 * Whether the sandbox is less than the deployment meant it to be: `bwrap`
 * that does not work (bash refused), or `auto` that fell back to `none`
 * although bubblewrap is installed (a fixable cause, such as a directory the
 * sandbox user cannot search). `auto` without bubblewrap and `none` are
 * what was asked for, and not degraded.
 */
export function sandboxDegraded(report: SandboxReport): boolean {
  return (
    report.effective === 'unavailable' ||
    (report.requested === 'auto' && report.effective === 'none' && report.bwrap !== undefined)
  );
}

/** Says once, at start, what the sandbox is; loudly when it is less than bwrap with cgroups. */
export function logSandboxReport(logger: Logger, report: SandboxReport): void {
  const unsafe =
    'unsafe with untrusted models: commands can read and write whatever the worker can, and see its processes';
  const details = { sandbox: report, cause: report.reason, fix: report.fix };
  if (report.effective === 'bwrap') {
    logger.info(
      { sandbox: report },
      `bash sandbox: bwrap${report.userNamespace ? ', own user namespace' : ''}, uid ${report.uid}, no capabilities`,
    );
  } else if (report.effective === 'unavailable') {
    logger.error(
      details,
      `TETHER_SANDBOX=bwrap but bubblewrap cannot build the sandbox: ${report.reason}; every bash call will fail until it is fixed (${report.fix})`,
    );
  } else if (sandboxDegraded(report)) {
    logger.error(
      details,
      `TETHER_SANDBOX=auto fell back to none although bubblewrap is installed: ${report.reason}. Fix: ${report.fix}. Until then bash runs without a sandbox, ${unsafe}; TETHER_SANDBOX=bwrap refuses bash instead`,
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
