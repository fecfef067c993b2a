const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * A time-sortable id: `prefix_` then 26 lowercase Crockford base-32
 * characters, 10 of time (ms) and 16 random (80 bits), like a ULID. Ids made
 * later sort after earlier ones (to the millisecond).
 */
export function newId(
  prefix: 'run' | 'clr' | 'ses' | 'tcr' | 'apr' | 'msg' | 'mem' | 'whk' | 'whd' | 'bat',
): string {
  let time = Date.now();
  let head = '';
  for (let i = 0; i < 10; i++) {
    head = ALPHABET[time % 32] + head;
    time = Math.floor(time / 32);
  }
  let tail = '';
  for (let i = 0; i < 16; i++) tail += ALPHABET[randomByte() & 31];
  return `${prefix}_${head}${tail}`;
}

/**
 * A run id made from a time and given bytes instead of random ones (at least 16): the same
 * arguments give the same id, so a step that may run twice (a schedule's tick retried after a
 * worker died) creates its run once. `sessionId` makes it a run of that session, as
 * {@link newSessionRunId} does.
 */
export function runIdAt(timeMs: number, bytes: Uint8Array, sessionId?: string): string {
  if (bytes.length < 16) throw new RangeError(`runIdAt needs 16 bytes, got ${bytes.length}`);
  let time = Math.max(0, Math.floor(timeMs));
  let head = '';
  for (let i = 0; i < 10; i++) {
    head = ALPHABET[time % 32] + head;
    time = Math.floor(time / 32);
  }
  let tail = '';
  for (let i = 0; i < 16; i++) tail += ALPHABET[(bytes[i] as number) & 31];
  const id = `run_${head}${tail}`;
  return sessionId === undefined ? id : `${id}_${sessionTag(sessionId)}`;
}

/**
 * When an id made by {@link newId} (or a run id made from one) was made, in
 * epoch ms: its 10 time characters after the prefix. Undefined for a string
 * that does not start that way.
 */
export function idTime(id: string): number | undefined {
  const start = id.indexOf('_') + 1;
  if (start === 0 || id.length < start + 10) return undefined;
  let time = 0;
  for (let i = start; i < start + 10; i++) {
    const digit = ALPHABET.indexOf(id[i] as string);
    if (digit < 0) return undefined;
    time = time * 32 + digit;
  }
  return time;
}

// Random bytes are drawn 4 KB at a time rather than 16 per id, through Web Crypto (Node and
// browsers alike: the SDK's browser entry imports this package).
const pool = new Uint8Array(4096);
let next = pool.length;
function randomByte(): number {
  if (next === pool.length) {
    globalThis.crypto.getRandomValues(pool);
    next = 0;
  }
  return pool[next++] as number;
}

/** How many characters of a session id's random part a session run's id carries (its hash tag). */
const SESSION_TAG_LENGTH = 16;

/**
 * The id of a run of session `sessionId`: a run id (`run_` and 26 characters)
 * then `_` and the last 16 characters of the session id (its random part).
 * Those 16 characters are the hash tag of the session's keys, so a run of a
 * session keeps its keys in the session's hash slot: the step that ends the
 * run appends its turn to the session's transcript (see `createKeys`).
 */
export function newSessionRunId(sessionId: string): string {
  return `${newId('run')}_${sessionTag(sessionId)}`;
}

/**
 * The id of a run of batch `batchId`: made as a session's run's is (see {@link newSessionRunId}),
 * with the last 16 characters of the batch id, so a batch's runs keep their keys in one hash slot
 * with the batch's: the step that ends a run counts it in its batch, and the last one tells.
 */
export function newBatchRunId(batchId: string): string {
  return `${newId('run')}_${sessionTag(batchId)}`;
}

/** The random part of a session id, which its runs' ids end with. */
export function sessionTag(sessionId: string): string {
  return sessionId.slice(-SESSION_TAG_LENGTH);
}

/** The session tag a run id ends with, or undefined for a run that belongs to no session. */
export function runSessionTag(runId: string): string | undefined {
  return runId.length === 4 + 26 + 1 + SESSION_TAG_LENGTH && runId[30] === '_' ? runId.slice(31) : undefined;
}

/** How many characters a top-level run id has after `run_` (and a crew child's id carries at its end). */
const RUN_BODY_LENGTH = 26;

/**
 * The id of a crew child of run `parentId`: a run id, then `_` and the hash
 * tag of the tree it belongs to, so that every run of a crew tree keeps its
 * keys in its root's hash slot (the step that ends a child records its result
 * in its parent, see `createKeys`). A tree under a session's run carries the
 * session's tag, as its root does; any other tree carries its root's 26
 * characters.
 */
export function newChildRunId(parentId: string): string {
  const sessionTail = runSessionTag(parentId);
  const tail = sessionTail ?? runTreeTag(parentId)?.slice(4) ?? parentId.slice(4);
  return `${newId('run')}_${tail}`;
}

/**
 * The top-level run whose hash slot a crew child's keys share (`run_` and its
 * 26 characters), or undefined for a run that is not such a child (a
 * top-level run, a session's run, or a child in a session's tree, which all
 * say where their keys are in other ways).
 */
export function runTreeTag(runId: string): string | undefined {
  return runId.length === 4 + 26 + 1 + RUN_BODY_LENGTH && runId[30] === '_'
    ? `run_${runId.slice(31)}`
    : undefined;
}
