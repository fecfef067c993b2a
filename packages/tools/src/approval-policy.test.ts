import { APPROVAL_LIMITS, type ApprovalPolicy } from '@tether/protocol';
import { describe, expect, it } from 'vitest';
import { checkApprovalPolicy, compileApprovalPolicy } from './approval-policy.js';

/** The reason a policy gives for a bash call running `command`. */
function bashReason(policy: ApprovalPolicy, command: string): string | undefined {
  return compileApprovalPolicy(policy).reasonFor({ name: 'bash', arguments: JSON.stringify({ command }) });
}

/** The reason a policy gives for a call of `name` with empty arguments. */
function toolReason(policy: ApprovalPolicy, name: string): string | undefined {
  return compileApprovalPolicy(policy).reasonFor({ name, arguments: '{}' });
}

describe('compileApprovalPolicy: tools', () => {
  it('matches an exact name, and only that name', () => {
    const policy: ApprovalPolicy = { tools: ['write_file'] };
    expect(toolReason(policy, 'write_file')).toBe('tools: write_file');
    expect(toolReason(policy, 'write_file_2')).toBeUndefined();
    expect(toolReason(policy, 'read_file')).toBeUndefined();
  });

  it('matches every name starting with a prefix entry', () => {
    const policy: ApprovalPolicy = { tools: ['github__*'] };
    expect(toolReason(policy, 'github__create_pull_request')).toBe('tools: github__*');
    expect(toolReason(policy, 'gitlab__x')).toBeUndefined();
  });

  it('matches every tool with `*` alone', () => {
    const policy: ApprovalPolicy = { tools: ['*'] };
    expect(toolReason(policy, 'read_file')).toBe('tools: *');
    expect(bashReason(policy, 'ls')).toBe('tools: *');
  });

  it('gives the first matching entry as the reason', () => {
    expect(toolReason({ tools: ['patch', 'github__*', '*'] }, 'github__merge')).toBe('tools: github__*');
  });

  it('never asks for clarify or escalate, even under `*`', () => {
    const policy: ApprovalPolicy = { tools: ['*', 'clarify', 'escalate'] };
    expect(toolReason(policy, 'clarify')).toBeUndefined();
    expect(toolReason(policy, 'escalate')).toBeUndefined();
  });

  it('lets everything run under an empty policy', () => {
    expect(toolReason({}, 'write_file')).toBeUndefined();
    expect(bashReason({}, 'rm -rf /')).toBeUndefined();
  });
});

describe('compileApprovalPolicy: timeout', () => {
  it('defaults to an hour and to rejecting', () => {
    const compiled = compileApprovalPolicy({});
    expect(compiled.timeoutMs).toBe(APPROVAL_LIMITS.timeoutDefaultMs);
    expect(compiled.onTimeout).toBe('reject');
  });

  it("keeps the policy's own timeout and decision", () => {
    const compiled = compileApprovalPolicy({ timeoutMs: 5_000, onTimeout: 'approve' });
    expect(compiled.timeoutMs).toBe(5_000);
    expect(compiled.onTimeout).toBe('approve');
  });
});

describe('compileApprovalPolicy: bash allow with ask for the rest', () => {
  const policy: ApprovalPolicy = {
    tools: ['write_file', 'patch', 'github__*'],
    bash: { allow: ['^git (status|diff|log)\\b', '^ls\\b'], ask: ['.*'] },
  };

  it.each(['git status', 'ls -la', '  git diff  ', 'git log --oneline -5'])('runs %j', (command) => {
    expect(bashReason(policy, command)).toBeUndefined();
  });

  it.each([
    'lsblk',
    'git status; rm -rf /',
    'git status && curl x | sh',
    'git log > /tmp/x',
    'git status\nrm -rf /',
    "g''it status",
    '$(echo git) status',
    'git status & rm -rf /',
    'git status `rm -rf /`',
    'git status \\\nrm -rf /',
    'git push',
  ])('asks for %j', (command) => {
    expect(bashReason(policy, command)).toBe('bash.ask: .*');
  });

  it('still matches other tools by name', () => {
    expect(toolReason(policy, 'write_file')).toBe('tools: write_file');
    expect(toolReason(policy, 'github__create_pull_request')).toBe('tools: github__*');
    expect(toolReason(policy, 'read_file')).toBeUndefined();
  });
});

describe('compileApprovalPolicy: bash ask for named commands', () => {
  const policy: ApprovalPolicy = { bash: { ask: ['^git push\\b', '\\brm\\b'] } };

  it.each([
    'git push',
    "g''it push",
    'g\\it push',
    '"git" push origin',
    'echo ok; git push',
    'true && git push',
    'false || git push',
    'git status | git push',
    'sleep 1 & git push',
    '$(git push)',
    '`git push`',
    'echo a\ngit push',
    '(git push)',
  ])('asks for %j', (command) => {
    expect(bashReason(policy, command)).toBe('bash.ask: ^git push\\b');
  });

  it('gives the first pattern that matches as the reason', () => {
    expect(bashReason(policy, 'rm -rf build')).toBe('bash.ask: \\brm\\b');
    expect(bashReason(policy, 'git push && rm x')).toBe('bash.ask: ^git push\\b');
  });

  it.each(['git pull', 'ls', 'git pushed-branch-list', 'echo git push'])('runs %j', (command) => {
    expect(bashReason(policy, command)).toBeUndefined();
  });
});

describe('compileApprovalPolicy: bash named in tools', () => {
  const policy: ApprovalPolicy = { tools: ['bash'], bash: { allow: ['^ls\\b'] } };

  it('runs an allowed plain command', () => {
    expect(bashReason(policy, 'ls')).toBeUndefined();
  });

  it('asks for any other command because of tools', () => {
    expect(bashReason(policy, 'cat x')).toBe('tools: bash');
    expect(bashReason(policy, 'ls; cat x')).toBe('tools: bash');
  });

  it('prefers the tools reason to an ask pattern', () => {
    expect(bashReason({ tools: ['bash'], bash: { ask: ['.*'] } }, 'cat x')).toBe('tools: bash');
  });
});

describe('compileApprovalPolicy: bash arguments the tool would refuse', () => {
  const call = (args: string) => ({ name: 'bash', arguments: args });

  it('runs nothing through the bash patterns when the arguments are not JSON or have no command', () => {
    const compiled = compileApprovalPolicy({ bash: { ask: ['.*'] } });
    expect(compiled.reasonFor(call('{"command": "git push"'))).toBeUndefined();
    expect(compiled.reasonFor(call('"git push"'))).toBeUndefined();
    expect(compiled.reasonFor(call('{"command": 42}'))).toBeUndefined();
    expect(compiled.reasonFor(call('{}'))).toBeUndefined();
  });

  it('still asks when tools names bash', () => {
    const compiled = compileApprovalPolicy({ tools: ['bash'], bash: { allow: ['.*'] } });
    expect(compiled.reasonFor(call('not json'))).toBe('tools: bash');
  });
});

describe('compileApprovalPolicy: linear time', () => {
  it('answers a pattern that backtracks exponentially elsewhere', () => {
    const command = `${'a'.repeat(50_000)}b`;
    expect(bashReason({ bash: { ask: ['^(a|a)*$'] } }, command)).toBeUndefined();
    expect(bashReason({ bash: { ask: ['^(a|a)*b$'] } }, command)).toBe('bash.ask: ^(a|a)*b$');
  });
});

describe('checkApprovalPolicy', () => {
  it('accepts a fine policy', () => {
    expect(
      checkApprovalPolicy({
        tools: ['write_file', 'github__*'],
        bash: { allow: ['^git (status|diff|log)\\b'], ask: ['.*', '\\brm\\b'] },
        timeoutMs: 60_000,
        onTimeout: 'approve',
      }),
    ).toBeUndefined();
    expect(checkApprovalPolicy({})).toBeUndefined();
  });

  it('refuses lookaround, naming the field', () => {
    expect(checkApprovalPolicy({ bash: { allow: ['(?=x)'] } })).toMatch(
      /^approval\.bash\.allow\[0\]: "\(\?=x\)"/,
    );
  });

  it('refuses a backreference, naming the field', () => {
    expect(checkApprovalPolicy({ bash: { ask: ['^ls', '(a)\\1'] } })).toMatch(/^approval\.bash\.ask\[1\]: /);
  });
});

describe('compileApprovalPolicy: patterns that do not compile', () => {
  it('throws an Error naming the field', () => {
    expect(() => compileApprovalPolicy({ bash: { ask: ['^ls', '(a)\\1'] } })).toThrow(
      /^approval\.bash\.ask\[1\]: /,
    );
    expect(() => compileApprovalPolicy({ bash: { allow: ['(?=x)'] } })).toThrow(
      /^approval\.bash\.allow\[0\]: /,
    );
  });
});
