import { scriptsIn } from '../../redis/lua-script.js';

/**
 * The webhooks' Lua scripts, one file each in this folder: every change that must happen together
 * is one of them. Each file's header lists its KEYS, ARGV and Output; each
 * wrapper here names the same keys and arguments in the same order (checked
 * when the file is loaded, so a wrapper that disagrees with its header fails
 * at import) and types the Output. Keys are named as in the key builders
 * (redis/keys.ts), so a caller can pass them as they are.
 */
export const COMMANDS = new URL('./', import.meta.url);

/** What each script replies, as ioredis hands it over (Lua's false is null). */
export interface Replies {
  webhookCollect: [string, string, string, string, string, 0 | 1, ...string[]] | null;
  webhookDispatch: [number, ...string[]];
  webhookTake: [string, string, string, string, ...string[]] | null;
  webhookSettle: [string, 0 | 1];
  webhookSleep: ['busy'] | ['asleep', string] | null;
  webhookCreate: number;
  webhookUpdate: 1 | 0;
  webhookDelete: 1 | 0;
  webhookEndpoints: (string | string[])[];
  webhookDeliveries: [0 | 1, ...(string | string[])[]];
  webhookRedeliver: 'wake' | 'ok' | 'missing' | 'disabled';
  webhookUnmark: 1 | 0;
}

const script = scriptsIn<Replies>(COMMANDS);

/** webhookCollect.lua: what a run's webhook deliveries need, and its events after the hint. */
export const webhookCollect = script('webhookCollect', {
  keys: ['record', 'events', 'metadata', 'webhookHint', 'waitpoint'],
  args: ['types', 'after', 'scan', 'tokenHash'],
});

/** webhookDispatch.lua: a run's deliveries, once per event and endpoint, in its chains. */
export const webhookDispatch = script('webhookDispatch', {
  keys: ['endpoints', 'cursor'],
  args: [
    'runId',
    'endpointPrefix',
    'duePrefix',
    'logPrefix',
    'deliveryPrefix',
    'chainPrefix',
    'cursorTtl',
    'deliveryTtl',
    'logMax',
    'logAgeMs',
    'wakeMs',
  ],
  rest: 'events',
});

/** webhookTake.lua: an endpoint's pump takes the deliveries due now. */
export const webhookTake = script('webhookTake', {
  keys: ['endpoint', 'due', 'inflight'],
  args: ['max', 'deliveryPrefix', 'leaseMs', 'recover'],
});

/** webhookSettle.lua: the end of an attempt of a delivery (or of the delivery). */
export const webhookSettle = script('webhookSettle', {
  keys: ['endpoint', 'due', 'inflight', 'delivery', 'chain'],
  args: ['deliveryId', 'outcome', 'httpStatus', 'error', 'nextAt', 'retention', 'disableAfterMs', 'reason'],
});

/** webhookSleep.lua: whether an endpoint's pump may sleep, and until when. */
export const webhookSleep = script('webhookSleep', { keys: ['endpoint', 'due'], args: [] });

/** webhookCreate.lua: a tenant's new endpoint, within its limit. */
export const webhookCreate = script('webhookCreate', {
  keys: ['endpoints', 'endpoint'],
  args: ['id', 'max'],
  rest: 'fields',
});

/** webhookUpdate.lua: changes an endpoint that exists. */
export const webhookUpdate = script('webhookUpdate', {
  keys: ['endpoint'],
  args: ['setCount'],
  rest: 'fields',
});

/** webhookDelete.lua: removes an endpoint. */
export const webhookDelete = script('webhookDelete', {
  keys: ['endpoints', 'endpoint', 'due', 'inflight', 'log'],
  args: ['id'],
});

/** webhookEndpoints.lua: a tenant's endpoints. */
export const webhookEndpoints = script('webhookEndpoints', {
  keys: ['endpoints'],
  args: ['endpointPrefix'],
});

/** webhookDeliveries.lua: a page of an endpoint's delivery log. */
export const webhookDeliveries = script('webhookDeliveries', {
  keys: ['log'],
  args: ['deliveryPrefix', 'afterId', 'afterScore', 'limit'],
});

/** webhookRedeliver.lua: a delivery sent again. */
export const webhookRedeliver = script('webhookRedeliver', {
  keys: ['endpoint', 'due', 'log', 'original', 'delivery', 'chain'],
  args: ['id', 'originalId', 'deliveryTtl', 'wakeMs'],
});

/** webhookUnmark.lua: a run off the dirty set, unless marked again. */
export const webhookUnmark = script('webhookUnmark', { keys: ['dirty'], args: ['runId', 'score'] });
