import { AgentError } from '@tether/agent';
import { describe, expect, it } from 'vitest';
import { WorkerMetrics } from '../metrics.js';
import { AttemptObserver, modelOutcome } from './observe.js';

describe('AttemptObserver', () => {
  it("counts a built-in tool by its name and an MCP server's tool as mcp (bounded labels)", async () => {
    const metrics = new WorkerMetrics({ tenantLabel: false });
    const observer = new AttemptObserver({ metrics }, { runId: 'run_x', attempt: 1, workerId: 'w' });
    observer.onToolCall('read_file', undefined)({ ok: true });
    observer.onToolCall('github__create_issue', 'github')({ ok: false, code: 'ERR_TOOL_MCP_CALL' });
    const text = await metrics.registry.metrics();
    expect(text).toContain('tether_tool_calls_total{tool="read_file",outcome="ok"} 1');
    expect(text).toContain('tether_tool_calls_total{tool="mcp",outcome="error"} 1');
    expect(text).not.toContain('github');
  });

  it("labels a model request's failure by its ERR_MODEL_ code, anything else as error", () => {
    expect(modelOutcome(new AgentError('ERR_MODEL_RATE_LIMITED', 'slow down'))).toBe('rate_limited');
    expect(modelOutcome(new AgentError('ERR_AGENT_INTERNAL', 'x'))).toBe('error');
    expect(modelOutcome(new Error('x'))).toBe('error');
  });
});
