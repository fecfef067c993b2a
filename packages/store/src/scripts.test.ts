import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as budgets from './budgets/commands/scripts.js';
import * as leases from './leases/commands/scripts.js';
import * as mcpServers from './mcp-servers/commands/scripts.js';
import * as memory from './memory/commands/scripts.js';
import { LuaScript } from './redis/lua-script.js';
import * as runs from './runs/commands/scripts.js';
import * as sessions from './sessions/commands/scripts.js';
import * as skills from './skills/commands/scripts.js';
import * as tenantSlots from './tenant-slots/commands/scripts.js';
import * as webhooks from './webhooks/commands/scripts.js';

/** Every domain's scripts module: its `commands/` folder and the wrappers it makes of the files there. */
const DOMAINS = { budgets, leases, mcpServers, memory, runs, sessions, skills, tenantSlots, webhooks };
/** Where the includes every domain shares are. */
const SHARED_INCLUDES = new URL('./redis/lua/includes/', import.meta.url);

type AnyScript = LuaScript<string, string, string, unknown>;

/** Each script with its domain's folder. */
const SCRIPTS = Object.values(DOMAINS).flatMap((module) =>
  Object.values(module)
    .filter((value): value is AnyScript => value instanceof LuaScript)
    .map((script) => ({ name: script.name, script, dir: module.COMMANDS })),
);

/** The `.lua` files of a folder, by name. */
function luaFiles(dir: URL): string[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.lua'))
    .map((file) => file.slice(0, -'.lua'.length));
}

/** A script's file as written, and its own code: without the header, comments and include lines. */
function scriptFile(dir: URL, name: string): { text: string; code: string } {
  const text = readFileSync(new URL(`${name}.lua`, dir), 'utf8');
  return { text, code: text.replace(/^--\[\[[\s\S]*?\]\]\n/, '').replace(/--.*$/gm, '') };
}

describe("every domain's scripts", () => {
  it.each(Object.entries(DOMAINS))(
    '%s has a wrapper for every file of its commands/ (a header it was checked against when loaded)',
    (_, module) => {
      const wrapped = SCRIPTS.filter((s) => s.dir === module.COMMANDS).map((s) => s.name);
      expect(wrapped.sort()).toEqual(luaFiles(module.COMMANDS).sort());
    },
  );

  it('names each script once, across the domains', () => {
    const names = SCRIPTS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(SCRIPTS)('$name uses every key and argument its header lists, and no other', ({ script, dir }) => {
    const { code } = scriptFile(dir, script.name);
    const used = (list: string) => [
      ...new Set([...code.matchAll(new RegExp(`${list}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1]))),
    ];
    const positions = (count: number) => Array.from({ length: count }, (_, i) => i + 1);
    expect(used('KEYS').sort((a, b) => a - b)).toEqual(positions(script.signature.keys.length));
    expect(used('ARGV').sort((a, b) => a - b)).toEqual(positions(script.signature.args.length));
    // The rest starts right after the named arguments (the index given to appendPairs or unpack).
    if (script.signature.rest) {
      expect(code).toMatch(new RegExp(`[(,] *${script.signature.args.length + 1} *[,)]`));
    }
  });

  it.each(SCRIPTS)('$name includes the helpers it calls, and no other', ({ script, dir }) => {
    // Each file defines the function it is named after; the generated `lifecycle` defines `terminal`,
    // `allowed` and `refusedOwnerStep`. A script sees its domain's includes and the shared ones.
    const own = readdirSync(dir).includes('includes') ? luaFiles(new URL('./includes/', dir)) : [];
    const helpers: [include: string, fn: string][] = [...own, ...luaFiles(SHARED_INCLUDES)].map((name) => [
      name,
      name,
    ]);
    helpers.push(['lifecycle', 'terminal|allowed|refusedOwnerStep']);
    const { text, code } = scriptFile(dir, script.name);
    const included = [...text.matchAll(/^--- @include "includes\/(\w+)"$/gm)].map((m) => m[1]);
    const called = helpers.filter(([, fn]) => new RegExp(`\\b(?:${fn})\\(`).test(code)).map(([name]) => name);
    expect(included.sort()).toEqual(called.sort());
  });
});
