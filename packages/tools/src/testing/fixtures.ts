/**
 * Test fixtures: a temporary workspace (with an "outside" directory and a
 * sibling whose name starts with the workspace's), a recording run context,
 * and a one-line way to call a tool. Not part of the build.
 */
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { RunEventInput, TodoItem } from '@tether/protocol';
import { createTools } from '../create-tools.js';
import { executeTool } from '../execute-tool.js';
import type { RunContext, Tool, ToolCallContext, ToolResult } from '../types.js';

export interface Fixture {
  /** Parent of everything below; removed by `cleanup`, which also closes every tool made by `tool`. */
  base: string;
  /** The workspace: `<base>/ws`. */
  workspace: string;
  /** A directory outside the workspace: `<base>/outside`. */
  outside: string;
  /** A sibling whose name starts with the workspace's: `<base>/ws-sibling`. */
  sibling: string;
  events: RunEventInput[];
  todos: TodoItem[];
  warnings: { obj: object; msg: string | undefined }[];
  context(overrides?: Partial<RunContext>): RunContext;
  tool(name: string, overrides?: Partial<RunContext>): Tool;
  cleanup(): Promise<void>;
}

/** Creates a fresh fixture under the OS temp directory. */
export async function createFixture(prefix = 'tether-tools-'): Promise<Fixture> {
  const base = await mkdtemp(path.join(tmpdir(), prefix));
  // Searchable by the unprivileged user a root worker's commands run as.
  await chmod(base, 0o755);
  const workspace = path.join(base, 'ws');
  const outside = path.join(base, 'outside');
  const sibling = path.join(base, 'ws-sibling');
  await Promise.all([mkdir(workspace), mkdir(outside), mkdir(sibling)]);
  const tools: Tool[] = [];
  const fixture: Fixture = {
    base,
    workspace,
    outside,
    sibling,
    events: [],
    todos: [],
    warnings: [],
    context(overrides = {}) {
      return {
        runId: 'run-test',
        workspace,
        emit: (event) => fixture.events.push(event),
        signal: new AbortController().signal,
        todos: {
          get: () => fixture.todos,
          set: (items) => {
            fixture.todos = items;
          },
        },
        sandbox: 'none',
        logger: {
          warn: (obj, msg) => fixture.warnings.push({ obj, msg }),
          info: () => undefined,
          debug: () => undefined,
        },
        ...overrides,
      };
    },
    tool(name, overrides) {
      const [tool] = createTools(fixture.context(overrides), [name]);
      if (tool === undefined) throw new Error(`no tool ${name}`);
      tools.push(tool);
      return tool;
    },
    async cleanup() {
      // As the worker does after an attempt: bash's prepared sandbox (processes, cgroup) goes first.
      await Promise.all(tools.map((tool) => tool.close?.()));
      await rm(base, { recursive: true, force: true });
    },
  };
  return fixture;
}

let calls = 0;

/** A fresh call context. */
export function callContext(signal: AbortSignal = new AbortController().signal): ToolCallContext {
  calls++;
  return { callId: `call-${calls}`, signal };
}

/** Calls a tool the way the agent loop does: JSON-encoded arguments through `executeTool`. */
export function invoke(tool: Tool, args: object, call: ToolCallContext = callContext()): Promise<ToolResult> {
  return executeTool(tool, JSON.stringify(args), call);
}
