/**
 * Approval of tool calls with real worker processes: the calls a run's policy holds wait for
 * decisions as a question does (no slot held), then run as approved, with edited arguments, or
 * not at all, in the model's order; a deadline decides by the policy's `onTimeout`; the first
 * decision wins; a worker killed with -9 while the run waits leaves nothing to repeat.
 */
import type { ApprovalPolicy, PendingApproval, RunEvent } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { call, type Deployment, TENANT, useDeployments } from './harness.js';

const deploy = useDeployments();

/** One turn: a file written (held by `tools`), a directory listed (free), a push (held by `bash.ask`). */
const turn = [
  {
    toolCalls: [
      call('write_file', { path: 'notes.txt', content: 'from the model\n' }),
      call('list_dir', { path: '.' }),
      call('bash', { command: 'git push origin main' }),
    ],
  },
  { content: 'done' },
];

const policy: ApprovalPolicy = {
  tools: ['write_file'],
  bash: { allow: ['^ls\\b'], ask: ['^git push\\b'] },
};

/** A crew root (its policy inherited by its child) that delegates one task: the child writes a file. */
async function submitCrew(d: Deployment, approval: ApprovalPolicy): Promise<string> {
  const { run } = await d.service.submit(TENANT, {
    input: 'lead the crew',
    toolsets: ['base', 'crew'],
    approval,
    model: {
      provider: 'replay',
      script: [{ toolCalls: [call('delegate_task', { goal: 'write the notes' })] }, { content: 'root done' }],
      children: [
        {
          match: 'notes',
          script: [
            { toolCalls: [call('write_file', { path: 'notes.txt', content: 'from the child\n' })] },
            { content: 'child done' },
          ],
        },
      ],
    } as never,
  });
  return run.id;
}

const approvalsOf = (events: RunEvent[]) =>
  events.filter((e) => e.type === 'approval.requested').map((e) => e.data as PendingApproval);
const resultsOf = (events: RunEvent[]) =>
  events
    .filter((e) => e.type === 'tool.result')
    .map((e) => e.data as { callId: string; name: string; ok: boolean; content: string });

describe('approval of tool calls', () => {
  it('holds the turn for its held calls, then runs them approved, edited or refused, in call order', async () => {
    const d = await deploy('approvals');
    await d.startWorker({ TETHER_WORKER_CONCURRENCY: '1' });
    const runId = await d.submit(turn, { approval: policy });
    await d.waitForEvent(
      runId,
      (e) => e.type === 'approval.requested' && (e.data as PendingApproval).tool === 'bash',
    );
    const events = await d.store.readEvents(runId);
    const [write, push] = approvalsOf(events) as [PendingApproval, PendingApproval];
    expect(
      [write, push].map(({ callId, tool, reason, arguments: args }) => ({ callId, tool, reason, args })),
    ).toEqual([
      {
        callId: 'call_0_0',
        tool: 'write_file',
        reason: 'tools: write_file',
        args: { path: 'notes.txt', content: 'from the model\n' },
      },
      {
        callId: 'call_0_2',
        tool: 'bash',
        reason: 'bash.ask: ^git push\\b',
        args: { command: 'git push origin main' },
      },
    ]);
    // Nothing of the turn ran, the free call neither: results keep the model's order.
    expect(resultsOf(events)).toEqual([]);
    const waiting = await d.store.get(runId);
    expect(waiting?.status).toBe('waiting_for_input');
    expect(waiting?.pendingApprovals).toEqual([write, push]);

    // No slot held: another run completes meanwhile.
    const other = await d.submit([{ content: 'second done' }]);
    await d.waitForEvent(other, 'run.completed');

    await d.service.decide(TENANT, runId, push.requestId, {
      decision: 'edit',
      arguments: { command: 'echo pushed elsewhere' },
      by: TENANT,
    });
    expect((await d.store.get(runId))?.status).toBe('waiting_for_input');
    await d.service.decide(TENANT, runId, write.requestId, {
      decision: 'reject',
      message: 'not that file',
      by: TENANT,
    });
    await d.waitForEvent(runId, 'run.completed');
    const results = resultsOf(await d.store.readEvents(runId));
    expect(results.map(({ callId, name, ok }) => ({ callId, name, ok }))).toEqual([
      { callId: 'call_0_0', name: 'write_file', ok: false },
      { callId: 'call_0_1', name: 'list_dir', ok: true },
      { callId: 'call_0_2', name: 'bash', ok: true },
    ]);
    expect(results[0]?.content).toContain('A reviewer refused this write_file call');
    expect(results[0]?.content).toContain('not that file');
    expect(results[2]?.content).toMatch(
      /^A reviewer changed the arguments before the call ran; it ran with: \{"command":"echo pushed elsewhere"\}\n\n/,
    );
    expect(results[2]?.content).toContain('pushed elsewhere');
    // The refused call never ran.
    expect(results[1]?.content).not.toContain('notes.txt');
  });

  it('at the deadline decides by onTimeout, each way, and says so', async () => {
    const d = await deploy('approval-timeouts');
    await d.startWorker();
    const write = [call('write_file', { path: 'late.txt', content: 'x' })];
    const rejecting = await d.submit([{ toolCalls: write }, { content: 'done' }], {
      approval: { tools: ['write_file'], timeoutMs: 1_000 },
    });
    const approving = await d.submit([{ toolCalls: write }, { content: 'done' }], {
      approval: { tools: ['write_file'], timeoutMs: 1_000, onTimeout: 'approve' },
    });
    for (const [runId, decision, ok] of [
      [rejecting, 'reject', false],
      [approving, 'approve', true],
    ] as const) {
      await d.waitForEvent(runId, 'run.completed', 30_000);
      const events = await d.store.readEvents(runId);
      const [requested] = approvalsOf(events);
      expect(requested?.onTimeout).toBe(decision);
      expect(events.filter((e) => e.type === 'approval.resolved').map((e) => e.data)).toEqual([
        { requestId: requested?.requestId, decision, by: 'timeout', timedOut: true },
      ]);
      const [result] = resultsOf(events);
      expect(result?.ok).toBe(ok);
      if (!ok)
        expect(result?.content).toContain('No reviewer decided on this write_file call before its deadline');
    }
    await expect(
      d.service.decide(
        TENANT,
        rejecting,
        approvalsOf(await d.store.readEvents(rejecting))[0]?.requestId ?? '',
        {
          decision: 'approve',
          by: TENANT,
        },
      ),
    ).rejects.toMatchObject({ code: 'ERR_APPROVAL_TIMED_OUT', statusCode: 409 });
  });

  it('of ten concurrent decisions, exactly one wins; another tenant is told the run does not exist', async () => {
    const d = await deploy('approval-race');
    await d.startWorker();
    const runId = await d.submit(
      [{ toolCalls: [call('write_file', { path: 'race.txt', content: 'x' })] }, { content: 'ok' }],
      { approval: { tools: ['*'] } },
    );
    const requested = await d.waitForEvent(runId, 'approval.requested');
    const { requestId } = requested.data as PendingApproval;
    await expect(
      d.service.decide('tenant-b', runId, requestId, { decision: 'approve', by: 'tenant-b' }),
    ).rejects.toMatchObject({ code: 'ERR_RUN_NOT_FOUND', statusCode: 404 });
    const decisions = Array.from({ length: 10 }, (_, i) =>
      d.service.decide(
        TENANT,
        runId,
        requestId,
        i % 2 === 0 ? { decision: 'approve', by: TENANT } : { decision: 'reject', by: TENANT },
      ),
    );
    const settled = await Promise.allSettled(decisions);
    expect(settled.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const lost of settled.filter((r) => r.status === 'rejected')) {
      expect((lost as PromiseRejectedResult).reason).toMatchObject({
        code: 'ERR_APPROVAL_ALREADY_DECIDED',
        statusCode: 409,
      });
    }
    await d.waitForEvent(runId, 'run.completed');
    const events = await d.store.readEvents(runId);
    expect(events.filter((e) => e.type === 'approval.resolved')).toHaveLength(1);
    expect(resultsOf(events)).toHaveLength(1);
  });

  it("a crew child's held call is told on its root, decided on the child, and the decision told there too", async () => {
    const d = await deploy('approval-crew');
    await d.startWorker();
    const rootId = await submitCrew(d, { tools: ['write_file'] });
    const asked = await d.waitForEvent(rootId, 'approval.requested');
    const { childRunId, ...request } = asked.data as PendingApproval & { childRunId: string };
    expect(childRunId).toMatch(/^run_[0-9a-z]{26}_[0-9a-z]{26}$/);
    expect(request).toMatchObject({ tool: 'write_file', reason: 'tools: write_file' });
    // The child's own request, the same one: the root only tells it.
    expect(approvalsOf(await d.store.readEvents(childRunId))).toEqual([request]);
    await expect(
      d.service.decide(TENANT, rootId, request.requestId, { decision: 'approve', by: TENANT }),
    ).rejects.toMatchObject({ code: 'ERR_APPROVAL_UNKNOWN' });
    await d.service.decide(TENANT, childRunId, request.requestId, { decision: 'approve', by: TENANT });
    await d.waitForEvent(rootId, 'run.completed', 60_000);
    const root = await d.store.readEvents(rootId);
    expect(root.filter((e) => e.type === 'approval.resolved').map((e) => e.data)).toEqual([
      { childRunId, requestId: request.requestId, decision: 'approve', by: TENANT },
    ]);
    // Told after the child asked, before the child finished.
    const order = root
      .map((e) => e.type)
      .filter((type) => type.startsWith('approval.') || type === 'child.finished');
    expect(order).toEqual(['approval.requested', 'approval.resolved', 'child.finished']);
    expect(resultsOf(await d.store.readEvents(childRunId))).toMatchObject([{ name: 'write_file', ok: true }]);
  });

  it("a crew child's deadline decides by onTimeout, and its root is told so", async () => {
    const d = await deploy('approval-crew-timeout');
    await d.startWorker();
    const rootId = await submitCrew(d, { tools: ['write_file'], timeoutMs: 1_000, onTimeout: 'approve' });
    await d.waitForEvent(rootId, 'run.completed', 60_000);
    const root = await d.store.readEvents(rootId);
    const [asked] = approvalsOf(root) as (PendingApproval & { childRunId: string })[];
    expect(root.filter((e) => e.type === 'approval.resolved').map((e) => e.data)).toEqual([
      {
        childRunId: asked?.childRunId,
        requestId: asked?.requestId,
        decision: 'approve',
        by: 'timeout',
        timedOut: true,
      },
    ]);
  });

  it('a worker killed with -9 while the run waits: the decision resumes it on another, the call run once', async () => {
    const d = await deploy('approval-kill');
    const first = await d.startWorker({ TETHER_WORKER_ID: 'worker-a' });
    const runId = await d.submit(
      [{ toolCalls: [call('bash', { command: 'echo ran >> count.txt; cat count.txt' })] }, { content: 'ok' }],
      { approval: { bash: { ask: ['.*'] } } },
    );
    const requested = await d.waitForEvent(runId, 'approval.requested');
    await first.stop('SIGKILL');
    await d.service.decide(TENANT, runId, (requested.data as PendingApproval).requestId, {
      decision: 'approve',
      by: TENANT,
    });
    await d.startWorker({ TETHER_WORKER_ID: 'worker-b' });
    await d.waitForEvent(runId, 'run.completed');
    const results = resultsOf(await d.store.readEvents(runId));
    expect(results).toHaveLength(1);
    // Run once: the file the command appends to has one line.
    expect(results[0]?.content).toMatch(/\nran\n$/);
    expect(results[0]?.content).not.toMatch(/ran\nran/);
  });
});
