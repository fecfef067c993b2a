import type {
  CreateRunBody,
  ErrorBody,
  PendingApproval,
  PendingClarify,
  PendingToolCall,
  Run,
  RunEvent,
  RunEventType,
  RunStatus,
  SealedMcpServerRef,
  TodoItem,
  Usage,
} from '@tether/protocol';

/**
 * Decoding what Redis answers into the protocol's types: a run record from
 * its hash and side keys, an event from a stream entry or a published message.
 */

/**
 * A submitted body as it is stored: its MCP servers' headers sealed (the API
 * seals them before the run is created), never in the clear.
 */
export type StoredBody = Omit<CreateRunBody, 'mcpServers'> & {
  mcpServers?: SealedMcpServerRef[] | undefined;
};

/** A run as stored: what the API shows plus what the worker needs. */
export interface RunRecord extends Run {
  tenant: string;
  /**
   * The submitted body (files included until the worker has written them, then in the `files`
   * key); gone once the run completes, kept for the retention after it failed or was cancelled.
   */
  spec?: StoredBody | undefined;
  cancelRequested: boolean;
  /** The fencing token of the worker that owns the current attempt. */
  owner?: string | undefined;
  /**
   * The BullMQ prefix of its job's queue, kept for the run's life so that a
   * change of `TETHER_QUEUE_SHARDS` never loses it (absent in a record of an
   * earlier version, whose job is in the one queue of `TETHER_QUEUE_PREFIX`).
   */
  queue?: string | undefined;
  bodyHash?: string | undefined;
  /** A crew parent: how many children it has started over its life. */
  childCount?: number | undefined;
  /** A crew child: the delegation's call, and when it times out (epoch ms). */
  crew?: { call: string; index: number; deadlineMs: number; escalated: boolean } | undefined;
}

function json<T>(text: string | undefined): T | undefined {
  if (text === undefined || text === '') return undefined;
  return JSON.parse(text) as T;
}

/** A run record from its hash and the keys beside it. */
export function parseRecord(
  hash: Record<string, string>,
  extra: {
    metadata: string | null;
    spec: string | null;
    /** The run's waitpoint, its requests' bodies found (see `RunKeys.waitpoint`). */
    waitpoint?: Waitpoint | undefined;
  },
): RunRecord {
  const record: RunRecord = {
    id: hash.id as string,
    tenant: hash.tenant as string,
    status: hash.status as RunStatus,
    createdAt: isoTime(hash.createdAt as string),
    attempts: Number(hash.attempts ?? 0),
    todos: json<TodoItem[]>(hash.todos) ?? [],
    cancelRequested: hash.cancelRequested !== undefined,
  };
  if (hash.title !== undefined) record.title = hash.title;
  if (hash.session) record.sessionId = hash.session;
  if (hash.retryOf) record.retryOf = hash.retryOf;
  if (hash.batch) record.batchId = hash.batch;
  if (hash.schedule) record.scheduleId = hash.schedule;
  if (hash.parent) {
    record.parentRunId = hash.parent;
    record.rootRunId = hash.root ?? hash.parent;
    record.depth = Number(hash.depth ?? 1);
    record.crew = {
      call: hash.call ?? '',
      index: Number(hash.index ?? 0),
      deadlineMs: Number(hash.deadline ?? 0),
      escalated: hash.escalated === '1',
    };
  }
  if (hash.childCount) record.childCount = Number(hash.childCount);
  if (hash.runAt) record.runAt = isoTime(hash.runAt);
  if (hash.expiresAt) record.expiresAt = isoTime(hash.expiresAt);
  if (hash.startedAt) record.startedAt = isoTime(hash.startedAt);
  if (hash.finishedAt) record.finishedAt = isoTime(hash.finishedAt);
  if (record.status === 'waiting_for_input') {
    const [question] = pendingRequests<PendingClarify>(extra.waitpoint, 'question');
    if (question) record.pendingClarify = question;
    const calls = pendingRequests<PendingToolCall>(extra.waitpoint, 'tool_output');
    if (calls.length > 0) record.pendingToolCalls = calls;
    const approvals = pendingRequests<PendingApproval>(extra.waitpoint, 'approval');
    if (approvals.length > 0) record.pendingApprovals = approvals;
  }
  if (hash.output !== undefined) record.output = hash.output;
  if (hash.result !== undefined) record.result = JSON.parse(hash.result) as unknown;
  const error = json<ErrorBody>(hash.error);
  if (error) record.error = error;
  const usage = json<Usage>(hash.usage);
  if (usage) record.usage = usage;
  if (hash.profile !== undefined && hash.model !== undefined)
    record.model = { profile: hash.profile, name: hash.model };
  const metadata = json<Record<string, unknown>>(extra.metadata ?? undefined);
  if (metadata) record.metadata = metadata;
  const spec = json<StoredBody>(extra.spec ?? undefined);
  if (spec) record.spec = spec;
  if (hash.owner) record.owner = hash.owner;
  if (hash.queue) record.queue = hash.queue;
  if (hash.bodyHash) record.bodyHash = hash.bodyHash;
  return record;
}

/** The kinds of request a waitpoint holds. */
export type RequestKind = 'question' | 'tool_output' | 'child' | 'approval';

/** One request of a waitpoint, as stored. */
export interface StoredRequest {
  /** The request: the data of its `clarify.requested`, `tool.requested`, `child.started` or `approval.requested`. */
  request: Record<string, unknown>;
  /** `pending`, `answered`, `received`, `reported`, `decided` or `timed_out`. */
  state: string;
  /** How it was resolved, as stored: the answer, the output (JSON), the child's result (JSON), the decision (JSON). */
  result: string | undefined;
}

/** The waitpoint a run waits on, as stored. */
export interface Waitpoint {
  id: string;
  kind: RequestKind;
  deadlineMs: number;
  pending: number;
  /** Its requests by id, in order. */
  requests: Map<string, StoredRequest>;
}

/** A request of a waitpoint as its hash names it: by its event's id in the log, or its body (moved from the release before). */
export interface RequestRef {
  id: string;
  eventId?: string | undefined;
  body?: string | undefined;
}

/** The order of two stream ids (`ms-seq`). */
function compareStreamIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}

/**
 * The requests a waitpoint's hash names, in order: their events', or for a run moved from the
 * release before the waitpoint, its `order` (request ids, space-separated).
 */
export function requestRefs(hash: Record<string, string>): RequestRef[] {
  const refs: RequestRef[] = [];
  for (const [field, value] of Object.entries(hash)) {
    if (field.startsWith('e:')) refs.push({ id: field.slice(2), eventId: value });
    else if (field.startsWith('q:')) refs.push({ id: field.slice(2), body: value });
  }
  const order = hash.order?.split(' ') ?? [];
  const position = (ref: RequestRef) => order.indexOf(ref.id);
  return refs.sort(
    (a, b) => compareStreamIds(a.eventId ?? '0', b.eventId ?? '0') || position(a) - position(b),
  );
}

/**
 * A waitpoint from its hash as read, the requests' bodies found (by request id: the data of their
 * events, read from the log) and their results; undefined when it holds none (only earlier requests'
 * states). A request whose body was not found is `{}`.
 */
export function parseWaitpoint(
  hash: Record<string, string> | null | undefined,
  bodies: ReadonlyMap<string, string> = new Map(),
  results: Record<string, string> | null | undefined = {},
): Waitpoint | undefined {
  if (!hash?.id) return undefined;
  const requests = new Map<string, StoredRequest>();
  for (const ref of requestRefs(hash)) {
    const body = ref.body ?? bodies.get(ref.id);
    requests.set(ref.id, {
      request: body ? (JSON.parse(body) as Record<string, unknown>) : {},
      state: hash[`s:${ref.id}`] ?? 'pending',
      result: results?.[ref.id],
    });
  }
  return {
    id: hash.id,
    kind: hash.kind as RequestKind,
    deadlineMs: Number(hash.deadline),
    pending: Number(hash.pending),
    requests,
  };
}

/** Requests of `kind` still pending, in order, each as its request. */
export function pendingRequests<T>(waitpoint: Waitpoint | undefined, kind: RequestKind): T[] {
  if (waitpoint?.kind !== kind) return [];
  return [...waitpoint.requests.values()]
    .filter((request) => request.state === 'pending')
    .map((request) => request.request as T);
}

/**
 * A stored time on the wire: records keep epoch ms (Redis's clock, for the
 * times the scripts set); a record written by an earlier version holds ISO 8601
 * already.
 */
export function isoTime(stored: string): string {
  return /^\d+$/.test(stored) ? new Date(Number(stored)).toISOString() : stored;
}

/** An event from its stream entry (`t`: type, `d`: data as JSON). */
export function toEvent(runId: string, id: string, fields: string[]): RunEvent {
  const values: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) values[fields[i] as string] = fields[i + 1] as string;
  return {
    id,
    runId,
    type: values.t as RunEventType,
    at: eventTime(id),
    data: JSON.parse(values.d ?? '{}'),
  } as RunEvent;
}

/** An event's time: the milliseconds of its stream id, as ISO 8601. */
export function eventTime(id: string): string {
  return new Date(Number(id.slice(0, id.indexOf('-')))).toISOString();
}

/** Parses an event as `appendEvent` publishes it (`at` is derived from the id). */
export function parsePublishedEvent(message: string): RunEvent {
  const event = JSON.parse(message) as Omit<RunEvent, 'at'>;
  return {
    id: event.id,
    runId: event.runId,
    type: event.type,
    at: eventTime(event.id),
    data: event.data,
  } as RunEvent;
}
