import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The tenant slots' Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  acquireTenantSlot: [1] | [0, number];
  releaseTenantSlot: string[];
  forgetTenantSlot: 1 | 0;
  renewTenantSlots: string[];
}

const script = scriptsIn<Replies>(COMMANDS);

/** acquireTenantSlot.lua: one of a tenant's slots for a run about to be claimed, or its place in the line. */
export const acquireTenantSlot = script('acquireTenantSlot', {
  keys: ['running', 'holders', 'parked'],
  args: ['runId', 'holder', 'cap', 'leaseMs', 'ttlMs'],
});

/** releaseTenantSlot.lua: a tenant's slot back at an attempt's end, and free slots handed to the runs waiting longest. */
export const releaseTenantSlot = script('releaseTenantSlot', {
  keys: ['running', 'holders', 'parked'],
  args: ['runId', 'holder', 'cap', 'reserveMs', 'ttlMs'],
});

/** forgetTenantSlot.lua: a run that ended without an attempt leaves the line, and gives back a slot handed to it. */
export const forgetTenantSlot = script('forgetTenantSlot', {
  keys: ['running', 'holders', 'parked'],
  args: ['runId'],
});

/** renewTenantSlots.lua: the leases of a worker's slots of one tenant, while their attempts hold them. */
export const renewTenantSlots = script('renewTenantSlots', {
  keys: ['running', 'holders'],
  args: ['leaseMs', 'ttlMs'],
  rest: 'held',
});
